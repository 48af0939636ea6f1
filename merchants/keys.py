"""API key and signing secret generation and hashing."""

import base64
import hashlib
import secrets

KEY_PREFIXES = {"Sandbox": "sk_sandbox_", "Live": "sk_live_"}
MIN_KEY_LENGTH = 24


def generate_api_key(kind: str) -> str:
    return KEY_PREFIXES[kind] + secrets.token_urlsafe(32)


def api_key_digest(key: str) -> str:
    """Keys are 256-bit random strings, so a plain SHA-256 cannot be reversed or guessed."""
    return hashlib.sha256(key.encode()).hexdigest()


def generate_signing_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def key_prefix(key: str) -> str:
    """What the admin shows to recognise a key: at most a quarter of it (and 12 characters),
    so the stored part never narrows the rest down to something guessable."""
    return key[: min(12, len(key) // 4)]
