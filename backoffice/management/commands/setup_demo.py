"""Prepare a fresh machine for ``make run``: demo catalogue, demo merchant, its keys printed.

The demo merchant's keys and its dashboard password are kept in ``var/demo.env`` (outside git,
readable by the owner only) so that every later ``make run`` can print them again; the database
holds only their digests. Each run also writes there the base URL it serves on, the demo
photo's URL and the Sandbox signing secret (read from the database, so a rotation shows), so
``. var/demo.env`` in another shell sets everything the README's quickstart uses: the keys, the
secret that verifies the demo's callbacks and the dashboard sign-in.

With ``SITEFLOW_STANDIN`` on (local settings) it points the demo Site Flow lab ``sf1`` at the
Site Flow stand-in ``make run`` then starts (``labs/siteflow_standin.py``, on
``SITEFLOW_STANDIN_PORT``, with the credentials kept in ``var/siteflow-standin``) and adds
``SITEFLOW_STANDIN_URL`` to ``var/demo.env``; otherwise it makes ``sf1`` inactive where a
former run made it, so no work goes to a stand-in that is not running.
"""

import os
import re
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand

from labs.services import siteflow_demo_lab_configure, siteflow_demo_lab_deactivate
from labs.siteflow_standin import standin_credentials
from merchants.models import Environment, EnvironmentKind, Merchant
from merchants.services import merchant_create

DEMO_NAME = "Demo Merchant"
DEMO_EMAIL = "demo@example.com"
KEY_NAMES = ("SANDBOX_API_KEY", "LIVE_API_KEY")
# Where keys were kept before var/demo.env (read when that file is missing).
_OLD_KEYS_FILE = "demo-keys.env"


def dashboard_sign_in(merchant: Merchant, kept_password: str | None) -> str:
    """The demo merchant's dashboard password: the one kept in ``var/demo.env`` while its
    sign-in exists, else a new random one set on a sign-in made for it (username and email
    ``DEMO_EMAIL``, never a staff account)."""
    user = merchant.user
    if user is None:
        user = User.objects.filter(username=DEMO_EMAIL, is_staff=False).first() or User(
            username=DEMO_EMAIL, email=DEMO_EMAIL, first_name=DEMO_NAME
        )
    if user.pk is not None and kept_password and user.check_password(kept_password):
        password = kept_password
    else:
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
    if merchant.user_id != user.pk:
        merchant.user = user
        merchant.save(update_fields=["user"])
    return password


def siteflow_standin_lab() -> str:
    """The demo Site Flow lab at the stand-in when ``make run`` runs one (its base URL), else
    made inactive where it exists ("")."""
    # Local settings only (config/settings/local.py): a deployment never runs the stand-in.
    if not getattr(settings, "SITEFLOW_STANDIN", False):
        siteflow_demo_lab_deactivate()
        return ""
    credentials = standin_credentials(settings.VAR_DIR / "siteflow-standin")
    port = int(getattr(settings, "SITEFLOW_STANDIN_PORT", 8001))
    base_url = f"http://127.0.0.1:{port}/api"
    siteflow_demo_lab_configure(
        base_url=base_url,
        token=credentials.token,
        secret=credentials.secret,
        destination=credentials.destination,
    )
    return base_url


def _assignments(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    found = re.findall(r"^(?:export )?([A-Z_]+)=(\S*)$", path.read_text(), flags=re.MULTILINE)
    return dict(found)


class Command(BaseCommand):
    help = (
        "Load the demo catalogue and create the demo merchant if none exists; print its keys, "
        "the base URL and the demo photo's URL, and write them to var/demo.env."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if "load_catalogue" in get_commands():
            call_command("load_catalogue", verbosity=0)
        demo_file = settings.VAR_DIR / "demo.env"
        keys = _assignments(demo_file) or _assignments(settings.VAR_DIR / _OLD_KEYS_FILE)
        if not Merchant.objects.filter(name=DEMO_NAME).exists():
            created = merchant_create(name=DEMO_NAME, email=DEMO_EMAIL)
            keys = {
                "SANDBOX_API_KEY": created.sandbox_api_key,
                "LIVE_API_KEY": created.live_api_key,
            }
        merchant = Merchant.objects.get(name=DEMO_NAME)
        values = {"API": settings.SANDBOX_BASE_URL}
        values.update((name, keys[name]) for name in KEY_NAMES if name in keys)
        if settings.DEMO_IMAGE_ENABLED:
            values["DEMO_IMAGE_URL"] = f"{settings.SANDBOX_BASE_URL}/demo/photo.jpg"
        values["SANDBOX_SIGNING_SECRET"] = Environment.objects.get(
            merchant=merchant, kind=EnvironmentKind.SANDBOX
        ).callback_signing_secret
        values["DASHBOARD_URL"] = f"{settings.SANDBOX_BASE_URL}/dashboard/login"
        values["DASHBOARD_EMAIL"] = DEMO_EMAIL
        values["DASHBOARD_PASSWORD"] = dashboard_sign_in(merchant, keys.get("DASHBOARD_PASSWORD"))
        standin_url = siteflow_standin_lab()
        if standin_url:
            values["SITEFLOW_STANDIN_URL"] = standin_url
        demo_file.write_text(
            "# make run's demo merchant and the URLs it serves: `. var/demo.env` in a shell.\n"
            + "".join(f"export {name}={value}\n" for name, value in values.items())
        )
        os.chmod(demo_file, 0o600)
        if all(name in keys for name in KEY_NAMES):
            self.stdout.write(
                f"Demo merchant '{DEMO_NAME}' (`. var/demo.env` sets these in another shell):"
            )
        else:
            self.stdout.write(
                f"Demo merchant '{DEMO_NAME}' exists but its keys are no longer kept; "
                "issue a new key from the admin (Environments → Issue a new API key)."
            )
        for name, value in values.items():
            self.stdout.write(f"{name}={value}")
        if standin_url:
            self.stdout.write(
                f"Site Flow demo lab sf1 sends its Live orders to the stand-in at {standin_url} "
                '(the README\'s "Site Flow on a laptop").'
            )
