"""Prepare a fresh machine for ``make run``: demo catalogue, demo merchant, its keys printed.

The demo keys are kept in ``var/demo-keys.env`` (outside git, readable by the owner only) so
that every later ``make run`` can print them again; the database holds only their digests.
"""

import os
from typing import Any

from django.conf import settings
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand

from merchants.models import Merchant
from merchants.services import merchant_create

DEMO_NAME = "Demo Merchant"


class Command(BaseCommand):
    help = "Load the demo catalogue and create the demo merchant if none exists; print its keys."

    def handle(self, *args: Any, **options: Any) -> None:
        if "load_catalogue" in get_commands():
            call_command("load_catalogue", verbosity=0)
        keys_file = settings.VAR_DIR / "demo-keys.env"
        if not Merchant.objects.filter(name=DEMO_NAME).exists():
            created = merchant_create(name=DEMO_NAME, email="demo@example.com")
            keys_file.write_text(
                f"SANDBOX_API_KEY={created.sandbox_api_key}\nLIVE_API_KEY={created.live_api_key}\n"
            )
            os.chmod(keys_file, 0o600)
        if keys_file.exists():
            self.stdout.write(f"Demo merchant '{DEMO_NAME}' keys:")
            self.stdout.write(keys_file.read_text().strip())
        else:
            self.stdout.write(
                f"Demo merchant '{DEMO_NAME}' exists but its keys file is gone; "
                "issue a new key from the admin (Environments → Issue a new API key)."
            )
