"""``manage.py load_catalogue``: load or refresh the demo catalogue, labs and rates."""

from typing import Any

from django.core.management.base import BaseCommand

from labs.services import demo_catalogue_load


class Command(BaseCommand):
    help = "Create or update the demo products, labs, shipping rates, exchange rates and taxes."

    def handle(self, *args: Any, **options: Any) -> None:
        counts = demo_catalogue_load()
        if options["verbosity"]:
            self.stdout.write(", ".join(f"{count} {name}" for name, count in counts.items()))
