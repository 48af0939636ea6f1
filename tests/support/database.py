"""The test database as other processes (workers, a second Django) reach it."""

import time
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


def sessions_waiting_for_a_lock() -> int:
    """How many sessions of this test database wait for a lock now (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def sessions_waiting_for_a_lock_soon(timeout: float = 10.0) -> int:
    """``sessions_waiting_for_a_lock`` once one waits, or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while sessions_waiting_for_a_lock() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return sessions_waiting_for_a_lock()
