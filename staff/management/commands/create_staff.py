"""``create_staff``: create or update a staff user, give it an API key, print the key."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from common.errors import ValidationFailed
from staff.keys import MIN_KEY_LENGTH
from staff.services import staff_api_key_create, staff_user_save


class Command(BaseCommand):
    help = (
        "Create (or update) a staff user and print a new staff API key as STAFF_API_KEY=...; "
        "--administrator gives the administrator role."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", required=True)
        parser.add_argument("--email", default=None)
        parser.add_argument("--password", default=None, help="To sign in to the admin.")
        parser.add_argument(
            "--api-key",
            default=None,
            help=f"Use this key (at least {MIN_KEY_LENGTH} characters) instead of a new one.",
        )
        parser.add_argument("--administrator", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"].strip()
        if not username:
            raise CommandError("--username must not be empty.")
        key = options["api_key"]
        if key is not None and len(key) < MIN_KEY_LENGTH:
            raise CommandError(f"--api-key must have at least {MIN_KEY_LENGTH} characters.")
        try:
            with transaction.atomic():  # a refused key leaves the user as it was
                user, created = staff_user_save(
                    username=username,
                    email=options["email"],
                    password=options["password"],
                    administrator=options["administrator"],
                )
                _, clear = staff_api_key_create(user=user, name="create_staff", key=key)
        except ValidationFailed as exc:
            raise CommandError(str(exc)) from exc
        role = " (administrator)" if options["administrator"] else ""
        verb = "Created" if created else "Updated"
        self.stderr.write(f"{verb} staff user {username}{role}.")
        self.stdout.write(f"STAFF_API_KEY={clear}")
