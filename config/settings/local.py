"""Local development: ``make run`` and ``manage.py`` use these; never a deployment.

Made for trying the service on one machine: assets and callbacks may be on this machine
(loopback and private addresses allowed), the URLs the service hands out name the port
``make run`` serves on, a demo photo is served for a first order, the lab simulator is quick,
and mail is written to files under ``var/mail`` with one line logged for each.
"""

from config.env import LOCAL_SECRET_KEY, env
from config.settings.base import *  # noqa: F403
from config.settings.base import VAR_DIR

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=LOCAL_SECRET_KEY)

# `PORT=8200 make run` serves on 8200: callback sources, thumbnail and payment URLs say so.
PORT = env.int("PORT", default=8000)
SANDBOX_BASE_URL = env.str("SANDBOX_BASE_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")
LIVE_BASE_URL = env.str("LIVE_BASE_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")
ALLOW_PRIVATE_URLS = env.bool("ALLOW_PRIVATE_URLS", default=True)
LAB_SIMULATOR_SECONDS = env.float("LAB_SIMULATOR_SECONDS", default=20.0)
DEMO_IMAGE_ENABLED = True

if not env.str("EMAIL_URL", default=""):
    EMAIL_BACKEND = "common.mail.FolderEmailBackend"
    EMAIL_FILE_PATH = str(VAR_DIR / "mail")

# Live orders may be made by the lab simulator here (development only; see base.py).
SIMULATOR_PRODUCES_LIVE = env.bool("SIMULATOR_PRODUCES_LIVE", default=True)
