"""API key and signing secret generation and hashing."""

import base64
import hashlib
import secrets

KEY_PREFIXES = {"Sandbox": "sk_sandbox_", "Live": "sk_live_"}


def generate_api_key(kind: str) -> str:
    return KEY_PREFIXES[kind] + secrets.token_urlsafe(32)


def api_key_digest(key: str) -> str:
    """Keys are 256-bit random strings, so a plain SHA-256 cannot be reversed or guessed."""
    return hashlib.sha256(key.encode()).hexdigest()


def generate_signing_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
