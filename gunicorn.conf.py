"""Gunicorn's settings for every way this project starts it (read from the working directory).

Only what must hold everywhere lives here; processes, ports and workers are given on the
command line by ``scripts/run_all.py`` and ``deploy/``.
"""

from gunicorn import util

from api.server_errors import write_error
from common.memory import long_lived_objects_frozen

# Requests gunicorn refuses itself (414, 431, 400) are answered in the JSON error envelope.
util.write_error = write_error


def post_worker_init(worker: object) -> None:
    """Once the worker has loaded the application: every object made so far (modules, settings,
    URL patterns, the catalogue's code) is long-lived, so the cyclic garbage collector stops
    walking it (``gc.freeze``). A request that builds thousands of objects (a page of orders)
    otherwise pays for full collections over the whole heap: 15 to 20% of its CPU."""
    long_lived_objects_frozen()
