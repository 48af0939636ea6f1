"""The one django-environ reader every settings module shares."""

from pathlib import Path
from urllib.parse import unquote, urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

# The secret keys the local and test settings fall back to, and the example file's placeholder:
# anyone with the code knows them, so the production settings refuse them.
LOCAL_SECRET_KEY = "local-development-only-not-a-secret"
TEST_SECRET_KEY = "test-only-not-a-secret"
KNOWN_SECRET_KEYS = frozenset({LOCAL_SECRET_KEY, TEST_SECRET_KEY, "CHANGE-ME"})


def _letters_and_digits(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def secret_key_known(value: str) -> bool:
    """Whether ``value`` is one of ``KNOWN_SECRET_KEYS`` in any spelling: in other letter
    case, with spaces, line breaks or other separators added, removed or changed, or padded
    out with more characters around it (compared on their letters and digits alone)."""
    spelt = _letters_and_digits(value)
    return any(_letters_and_digits(known) in spelt for known in KNOWN_SECRET_KEYS)


def email_file_path(url: str) -> str:
    """The folder ``EMAIL_URL=filemail:///var/mail/print-api`` names: its path as written,
    absolute. django-environ drops the path's first slash, making it a folder under wherever
    the process started (the checkout); a folder given any other way is refused."""
    parts = urlsplit(url)
    folder = unquote(parts.path)
    if parts.netloc or not folder.startswith("/") or folder.strip("/") == "":
        raise ImproperlyConfigured(
            "EMAIL_URL=filemail:///... must name an absolute folder, such as "
            f"filemail:///var/mail/print-api (not {url!r})."
        )
    return folder
