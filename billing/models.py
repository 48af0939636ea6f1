"""Billing's own rows: the Stripe events taken (each once) and the monthly invoices."""

from decimal import Decimal

from django.db import models
from django.utils import timezone

from merchants.models import Merchant


class StripeEvent(models.Model):
    """A Stripe webhook event taken: its id is unique, so a redelivered event changes nothing."""

    event_id = models.CharField(max_length=255, unique=True)
    type = models.CharField(max_length=100)
    received = models.DateTimeField(default=timezone.now)
    outcome = models.CharField(max_length=40, help_text="What it did to the order it names.")
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-received"]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"


class Invoice(models.Model):
    """A month's invoice of an invoice-billed merchant: the Live charges of the month (and any
    older one not invoiced yet) in one currency, each carrying ``number`` as its
    ``serviceInvoiceNumber``."""

    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="invoices")
    number = models.CharField(max_length=50, unique=True)
    period_start = models.DateField()
    period_end = models.DateField(help_text="The first day after the period.")
    currency = models.CharField(max_length=3)
    total_cost = models.DecimalField(max_digits=14, decimal_places=2)
    total_tax = models.DecimalField(max_digits=14, decimal_places=2)
    charge_count = models.PositiveIntegerField()
    issued = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-period_start", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["merchant", "period_start", "currency"], name="invoice_once_a_month"
            )
        ]

    def __str__(self) -> str:
        return self.number

    @property
    def total(self) -> Decimal:
        return self.total_cost + self.total_tax
