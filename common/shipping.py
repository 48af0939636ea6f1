"""The shipping methods of the specification, shared by labs (rates), quotes and orders."""

from django.db import models


class ShippingMethod(models.TextChoices):
    BUDGET = "Budget"
    STANDARD = "Standard"
    STANDARD_PLUS = "StandardPlus"
    EXPRESS = "Express"
    OVERNIGHT = "Overnight"


_BY_LOWER_CASE = {method.lower(): str(method) for method in ShippingMethod.values}


def shipping_method_parse(text: object) -> str | None:
    """The shipping method ``text`` names, in any letter case and with spaces around it
    (``standardplus`` -> ``StandardPlus``), or None when it names none. The one parser of a
    shipping method given by a merchant, staff or a sheet."""
    if not isinstance(text, str):
        return None
    return _BY_LOWER_CASE.get(text.strip().lower())
