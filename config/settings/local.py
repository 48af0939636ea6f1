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

# `SITEFLOW_STANDIN=1 make run` also runs a Site Flow compatible stand-in on
# SITEFLOW_STANDIN_PORT (labs/siteflow_standin.py, started by scripts/run_all.py) and
# `setup_demo` points the demo Site Flow lab sf1 at it; without it sf1 is made inactive.
SITEFLOW_STANDIN = env.bool("SITEFLOW_STANDIN", default=False)
SITEFLOW_STANDIN_PORT = env.int("SITEFLOW_STANDIN_PORT", default=PORT + 1)
# Site Flow lab orders are checked on soon after submission, and at least every 30 s.
SITEFLOW_POLL_BASE_SECONDS = env.float("SITEFLOW_POLL_BASE_SECONDS", default=5.0)
SITEFLOW_POLL_MAX_SECONDS = env.float("SITEFLOW_POLL_MAX_SECONDS", default=30.0)
