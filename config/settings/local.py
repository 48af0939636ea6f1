"""Local development: ``make run`` and ``manage.py`` use these; never a deployment."""

from config.env import env
from config.settings.base import *  # noqa: F403

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="local-development-only-not-a-secret")
