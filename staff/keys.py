"""Staff API keys: the merchant keys' scheme (``common.keys``) with their own prefix."""

from common.keys import MIN_KEY_LENGTH, key_digest, key_generate, key_prefix

__all__ = ["MIN_KEY_LENGTH", "generate_staff_api_key", "key_prefix", "staff_api_key_digest"]

STAFF_KEY_PREFIX = "sk_staff_"
staff_api_key_digest = key_digest


def generate_staff_api_key() -> str:
    return key_generate(STAFF_KEY_PREFIX)
