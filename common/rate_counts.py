"""Rate-limit counts shared by every process of one machine, in a small SQLite file.

The embedded default has no Redis: its web processes (and anything else that counts) share
one SQLite database of their own under ``VAR_DIR`` (``RATE_LIMIT_DATABASE``), apart from the
service's, so counting never waits on the service's transactions. A key's window of
``seconds`` is cut into ``WINDOW_BUCKETS`` buckets, one row each. A request is counted by one
``INSERT ... SELECT ... ON CONFLICT`` statement: SQLite runs a writing statement under its
write lock, taken before the statement reads, so the sum it reads and the count it adds are
one step across processes, and concurrent requests never count over each other.

The sum covers every bucket that overlaps the window, the partly expired oldest one whole.
So no window of ``seconds`` ever passes more than the limit (as with Redis's sliding window);
a refused request may be one that Redis would have passed, at most a bucket's width
(``seconds / WINDOW_BUCKETS``, a second of a minute) before the oldest of its window expires.

The counts need not survive a power cut (``synchronous=OFF``): a lost count is a request
not counted, never a refusal. Rows of buckets that left their window are deleted at most once
a minute per process.
"""

import math
import os
import sqlite3
import threading
import time
from pathlib import Path

WINDOW_BUCKETS = 60
PURGE_SECONDS = 60.0
BUSY_TIMEOUT_SECONDS = 5.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS window_counts (
    key TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    n INTEGER NOT NULL,
    until REAL NOT NULL,
    PRIMARY KEY (key, bucket)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS window_counts_until ON window_counts (until);
"""

# Counted (one row changed) only while fewer than the limit are in the window's buckets.
_COUNT = """
INSERT INTO window_counts (key, bucket, n, until)
SELECT :key, :bucket, 1, :until
WHERE (
    SELECT coalesce(sum(n), 0) FROM window_counts WHERE key = :key AND bucket >= :oldest
) < :limit
ON CONFLICT (key, bucket) DO UPDATE SET n = n + 1
"""

_OLDEST = "SELECT min(bucket) FROM window_counts WHERE key = ? AND bucket >= ? AND n > 0"


class _Held(threading.local):
    """This thread's connection, for the file and process it was opened in (a connection
    must not cross a fork), and when it last deleted expired rows."""

    connection: sqlite3.Connection | None = None
    opened_for: tuple[str, int] | None = None
    purged_at = 0.0


_held = _Held()


def shared_connection(path: Path) -> sqlite3.Connection:
    """This thread's connection to the shared file ``path`` (opened in autocommit mode, WAL,
    with the counts' table): every process of the machine writes there under SQLite's write
    lock, one statement at a time (``common.concurrency`` keeps its places there too)."""
    return _connection(path)


def _connection(path: Path) -> sqlite3.Connection:
    owner = (str(path), os.getpid())
    if _held.connection is None or _held.opened_for != owner:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=OFF")
        connection.executescript(_SCHEMA)
        _held.connection, _held.opened_for, _held.purged_at = connection, owner, 0.0
    return _held.connection


def sqlite_count_request(*, path: Path, key: str, limit: int, seconds: int) -> float | None:
    """Count one request under ``key`` if fewer than ``limit`` were counted, by any process
    using ``path``, in the buckets overlapping the last ``seconds``: ``None`` when counted,
    else the seconds until the oldest of those buckets has left the window."""
    connection = _connection(path)
    now = time.time()
    width = seconds / WINDOW_BUCKETS
    bucket = math.floor(now / width)
    oldest = math.floor((now - seconds) / width)
    if now - _held.purged_at >= PURGE_SECONDS:
        connection.execute("DELETE FROM window_counts WHERE until <= ?", (now,))
        _held.purged_at = now
    counted = connection.execute(
        _COUNT,
        {
            "key": key,
            "bucket": bucket,
            "until": (bucket + 1) * width + seconds,
            "oldest": oldest,
            "limit": limit,
        },
    ).rowcount
    if counted:
        return None
    (first,) = connection.execute(_OLDEST, (key, oldest)).fetchone()
    if first is None:  # a limit of 0
        return float(seconds)
    return max((first + 1) * width + seconds - now, 0.001)
