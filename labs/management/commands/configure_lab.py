"""``manage.py configure_lab CODE --connector siteflow|simulator ...``: point a lab at a Site
Flow site (base URL, token, secret, destination) or back at the simulator. The secret is
saved, never printed."""

from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from labs.models import Connector, Lab
from labs.services import lab_connector_configure


class Command(BaseCommand):
    help = "Set a lab's connector and its Site Flow settings (the secret is never printed)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("code", help="The lab's code, e.g. gb1.")
        parser.add_argument("--connector", required=True, choices=Connector.values)
        parser.add_argument("--base-url", help="Site Flow base URL, e.g. https://lab.example/api")
        parser.add_argument("--token", help="Site Flow token.")
        parser.add_argument("--secret", help="Site Flow secret (saved, never printed).")
        parser.add_argument("--destination", help="Site Flow destination name.")

    def handle(self, *args: Any, **options: Any) -> None:
        code = options["code"]
        lab = Lab.objects.filter(code=code).first()
        if lab is None:
            raise CommandError(f"No lab has code '{code}'.")
        try:
            lab = lab_connector_configure(
                lab=lab,
                connector=options["connector"],
                base_url=options["base_url"],
                token=options["token"],
                secret=options["secret"],
                destination=options["destination"],
            )
        except ValidationError as exc:
            problems = [message for messages in exc.message_dict.values() for message in messages]
            raise CommandError(f"Lab {code} was not changed: {' '.join(problems)}") from exc
        lines = [f"Lab {lab.code}: connector {lab.connector}"]
        if lab.connector == Connector.SITEFLOW:
            lines += [
                f"  base URL: {lab.siteflow_base_url}",
                f"  token: {lab.siteflow_token}",
                "  secret: " + ("changed (not shown)" if options["secret"] else "kept (not shown)"),
                f"  destination: {lab.siteflow_destination or '(none)'}",
                f"  capabilities: {', '.join(lab.capabilities) or '(none)'}",
            ]
        self.stdout.write("\n".join(lines))
