import copy
from typing import Any

import pytest
from django.apps import apps
from django.db import models

from labs.services import demo_catalogue_load

_snapshot: list[tuple[Any, list[models.Model]]] = []


@pytest.fixture
def catalogue(db: None) -> None:
    """The demo catalogue: loaded by its command once, then copied in with bulk inserts."""
    if not _snapshot:
        demo_catalogue_load()
        for app in ("products", "labs"):
            for model in apps.get_app_config(app).get_models():
                _snapshot.append((model, list(model._default_manager.all())))
        return
    for model, rows in _snapshot:
        if not model._default_manager.exists():
            model._default_manager.bulk_create(copy.deepcopy(rows))


BASE_ORDER: dict[str, Any] = {
    "merchantReference": "MR-1001",
    "shippingMethod": "Standard",
    "recipient": {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "phoneNumber": "+44 7700 900123",
        "address": {
            "line1": "1 Analytical Row",
            "line2": "Flat 2",
            "postalOrZipCode": "SW1A 1AA",
            "countryCode": "GB",
            "townOrCity": "London",
            "stateOrCounty": "Greater London",
        },
    },
    "items": [
        {
            "merchantReference": "item-1",
            "sku": "GLOBAL-CAN-10X10",
            "copies": 2,
            "sizing": "fillPrintArea",
            "attributes": {"wrap": "ImageWrap"},
            "assets": [{"printArea": "default", "url": "https://images.example.com/cat.jpg"}],
        }
    ],
    "metadata": {"channel": "web"},
}


def order_body(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(BASE_ORDER)
    body.update(changes)
    return body


def book_item(pages: int | None = 40) -> dict[str, Any]:
    asset: dict[str, Any] = {"printArea": "default", "url": "https://images.example.com/book.pdf"}
    if pages is not None:
        asset["pageCount"] = pages
    return {
        "sku": "BOOK-A4-L-HARD-M",
        "copies": 1,
        "assets": [asset, {"printArea": "spine", "url": "https://images.example.com/spine.jpg"}],
    }
