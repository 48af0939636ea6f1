"""``manage.py order_documents``: every order's document written afresh (``orders.document``),
after a deploy that changes what a document shows."""

from typing import Any

from django.core.management.base import BaseCommand

from orders.document import order_documents_rebuild


class Command(BaseCommand):
    help = "Write every order's stored document afresh (after a change of its shape)."

    def handle(self, *args: Any, **options: Any) -> None:
        written = order_documents_rebuild()
        self.stdout.write(f"{written} order documents written.")
