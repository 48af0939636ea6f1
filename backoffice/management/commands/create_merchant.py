from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from common.errors import ValidationFailed
from labs.models import ExchangeRate
from labs.selectors import currencies_supported
from merchants.models import BillingMode
from merchants.services import merchant_create

BILLING_MODES = {"invoice": BillingMode.INVOICE, "card": BillingMode.CARD}


class Command(BaseCommand):
    help = "Create a merchant with Sandbox and Live environments and print their API keys."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--sandbox-api-key", help="Use this Sandbox key instead of a generated one."
        )
        parser.add_argument("--live-api-key", help="Use this Live key instead of a generated one.")
        parser.add_argument(
            "--callback-url", default="", help="Default callback URL of both environments."
        )
        pause = parser.add_mutually_exclusive_group()
        pause.add_argument("--pause-minutes", type=int, help="Hold new orders for N minutes.")
        pause.add_argument(
            "--pause-indefinite", action="store_true", help="Hold new orders until submitted."
        )
        parser.add_argument("--currency", default="GBP", help="Billing currency (ISO 4217).")
        parser.add_argument(
            "--billing",
            choices=sorted(BILLING_MODES),
            default="invoice",
            help="How the merchant pays: on account (invoice) or by card, authorised per Live "
            "order on its payment page.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["pause_minutes"] is not None and options["pause_minutes"] < 0:
            raise CommandError("--pause-minutes must be zero or more.")
        if len(options["currency"]) != 3 or not options["currency"].isalpha():
            raise CommandError("--currency must be a three-letter ISO 4217 code.")
        supported = currencies_supported()
        # Before any exchange rate is loaded every currency is taken on trust.
        if ExchangeRate.objects.exists() and options["currency"].upper() not in supported:
            raise CommandError(
                f"--currency {options['currency']} has no exchange rate "
                f"(known: {', '.join(sorted(supported))})."
            )
        try:
            created = merchant_create(
                name=options["name"],
                email=options["email"],
                sandbox_api_key=options["sandbox_api_key"],
                live_api_key=options["live_api_key"],
                callback_url=options["callback_url"],
                pause_minutes=options["pause_minutes"],
                pause_indefinite=options["pause_indefinite"],
                currency=options["currency"],
                billing_mode=BILLING_MODES[options["billing"]],
            )
        except ValidationFailed as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"MERCHANT_ID={created.merchant.pk}")
        self.stdout.write(f"SANDBOX_API_KEY={created.sandbox_api_key}")
        self.stdout.write(f"LIVE_API_KEY={created.live_api_key}")
