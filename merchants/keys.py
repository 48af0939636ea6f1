"""Merchant API keys (one prefix per environment) and callback signing secrets."""

import base64
import secrets

from common.keys import MIN_KEY_LENGTH, key_digest, key_generate, key_prefix

__all__ = ["MIN_KEY_LENGTH", "api_key_digest", "generate_api_key", "key_prefix"]

KEY_PREFIXES = {"Sandbox": "sk_sandbox_", "Live": "sk_live_"}
api_key_digest = key_digest


def generate_api_key(kind: str) -> str:
    return key_generate(KEY_PREFIXES[kind])


def generate_signing_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
