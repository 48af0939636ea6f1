"""Test settings: the same code paths, faster password hashing, files in a temporary folder."""

import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from config.env import TEST_SECRET_KEY, env
from config.settings import base
from config.settings.base import *  # noqa: F403

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=TEST_SECRET_KEY)

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="print-api-media-"))
STORAGES["staticfiles"] = {  # noqa: F405
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
}
# Without Redis, rate limits count in a file of this run (tests/conftest.py: one per test).
RATE_LIMIT_DATABASE = Path(tempfile.mkdtemp(prefix="print-api-rate-limits-")) / "counts.sqlite3"
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {  # noqa: F405
    "api_key": "100000/min",
    "wrong_key": "100000/min",
    "registration": "100000/min",
}

# Live orders may be made by the lab simulator here (development only; see base.py).
SIMULATOR_PRODUCES_LIVE = env.bool("SIMULATOR_PRODUCES_LIVE", default=True)

# PostgreSQL's test database emptied between transactional tests by DELETE rather than TRUNCATE
# (tests/support/postgresql: milliseconds instead of about a second a test).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.support.postgresql"  # noqa: F405

# Each pytest-xdist worker (``make test`` runs the quick tests on two) has a Redis database of its
# own, as pytest-django gives it its own test database: worker gwN the Nth after REDIS_URL's.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # set by pytest-xdist, not a setting
if base.REDIS_URL and _xdist_worker:
    _redis = urlsplit(base.REDIS_URL)
    _redis_db = int(_redis.path.strip("/") or 0) + int(_xdist_worker.removeprefix("gw"))
    REDIS_URL = _redis._replace(path=f"/{_redis_db}").geturl()
    CACHES["default"]["LOCATION"] = REDIS_URL  # noqa: F405
    CELERY_BROKER_URL = REDIS_URL
