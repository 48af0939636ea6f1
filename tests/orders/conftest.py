import copy
from typing import Any

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
