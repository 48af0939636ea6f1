"""Gunicorn's settings for every way this project starts it (read from the working directory).

Only what must hold everywhere lives here; processes, ports and workers are given on the
command line by ``scripts/run_all.py`` and ``deploy/``.
"""

from gunicorn import util

from api.server_errors import write_error

# Requests gunicorn refuses itself (414, 431, 400) are answered in the JSON error envelope.
util.write_error = write_error
