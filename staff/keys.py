"""Staff API key generation and hashing (the same scheme as merchant keys)."""

import hashlib
import secrets

STAFF_KEY_PREFIX = "sk_staff_"
MIN_KEY_LENGTH = 24


def generate_staff_api_key() -> str:
    return STAFF_KEY_PREFIX + secrets.token_urlsafe(32)


def staff_api_key_digest(key: str) -> str:
    """Keys are 256-bit random strings (or at least 24 characters when given), so a plain
    SHA-256 is enough: only the digest is stored."""
    return hashlib.sha256(key.encode()).hexdigest()


def key_prefix(key: str) -> str:
    """What the admin shows to recognise a key: at most a quarter of it (and 12 characters)."""
    return key[: min(12, len(key) // 4)]
