"""The test database as other processes (workers, a second Django) reach it."""

from urllib.parse import quote as urlquote

from django.conf import settings
from django.db import connection

ON_POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def database_url() -> str:
    """The URL of the database this test session uses (pytest-django's ``test_...`` one)."""
    db = connection.settings_dict
    user = urlquote(db.get("USER") or "", safe="")
    password = f":{urlquote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    credentials = f"{user}{password}@" if user else ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}{db.get('HOST') or '127.0.0.1'}{port}/{db['NAME']}"
