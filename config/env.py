"""The one django-environ reader every settings module shares."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

# The secret keys the local and test settings fall back to, and the example file's placeholder:
# anyone with the code knows them, so the production settings refuse them.
LOCAL_SECRET_KEY = "local-development-only-not-a-secret"
TEST_SECRET_KEY = "test-only-not-a-secret"
KNOWN_SECRET_KEYS = frozenset({LOCAL_SECRET_KEY, TEST_SECRET_KEY, "CHANGE-ME"})
