"""Benchmark-only settings: the local settings plus ``bench.urls`` (the bare view).

Never used by a deployment: only ``bench/bench_api.py`` points gunicorn at this module.
"""

from config.settings.local import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
