"""The shipping methods of the specification, shared by labs (rates), quotes and orders."""

from django.db import models


class ShippingMethod(models.TextChoices):
    BUDGET = "Budget"
    STANDARD = "Standard"
    STANDARD_PLUS = "StandardPlus"
    EXPRESS = "Express"
    OVERNIGHT = "Overnight"
