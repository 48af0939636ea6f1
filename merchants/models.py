"""Merchant accounts, their Sandbox and Live environments, and API keys."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from common.keys import HashedKey


class BillingMode(models.TextChoices):
    INVOICE = "Invoice", "On account (invoice)"
    CARD = "Card", "Card (authorised per order)"


class Merchant(models.Model):
    """An account; creating it creates its Sandbox and Live environments together."""

    name = models.CharField(max_length=200)
    email = models.EmailField(blank=True)
    billing_currency = models.CharField(max_length=3, default="GBP")
    billing_mode = models.CharField(
        max_length=10, choices=BillingMode.choices, default=BillingMode.INVOICE
    )
    # The dashboard's sign-in: the person who registered the account; never a staff account
    # (forms and model validation offer and accept only the others).
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="merchant",
        limit_choices_to={"is_staff": False, "is_superuser": False},
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EnvironmentKind(models.TextChoices):
    SANDBOX = "Sandbox"
    LIVE = "Live"


class PauseMode(models.TextChoices):
    NONE = "None", "No pause: orders go to fulfilment at once"
    MINUTES = "Minutes", "Hold each order for a number of minutes"
    INDEFINITE = "Indefinite", "Hold each order until submitted by hand"


class Environment(models.Model):
    """A merchant's Sandbox or Live side: its own keys, orders, callbacks and settings."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="environments")
    kind = models.CharField(max_length=10, choices=EnvironmentKind.choices)
    callback_url = models.URLField(
        max_length=2000, blank=True, help_text="Default callback URL for orders without one."
    )
    pause_mode = models.CharField(max_length=12, choices=PauseMode.choices, default=PauseMode.NONE)
    pause_minutes = models.PositiveIntegerField(default=0)
    # Standard Webhooks secret ("whsec_" + base64); needed in clear to sign callbacks.
    callback_signing_secret = models.CharField(max_length=80)
    # After a rotation the old secret signs too, until this time, so receivers can switch over.
    previous_signing_secret = models.CharField(max_length=80, blank=True)
    previous_signing_secret_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "kind"], name="one_environment_per_kind")
        ]
        ordering = ["merchant__name", "kind"]

    def __str__(self) -> str:
        return f"{self.merchant.name} ({self.kind})"

    @property
    def is_sandbox(self) -> bool:
        return self.kind == EnvironmentKind.SANDBOX

    def signing_secrets(self) -> list[str]:
        """The secrets a callback is signed with now: the current one, then the previous one
        while its rotation overlap lasts."""
        secrets = [self.callback_signing_secret]
        until = self.previous_signing_secret_until
        if self.previous_signing_secret and until is not None and until > timezone.now():
            secrets.append(self.previous_signing_secret)
        return secrets

    @property
    def base_url(self) -> str:
        """The environment's public base URL (callback sources, file URLs labs fetch)."""
        return settings.SANDBOX_BASE_URL if self.is_sandbox else settings.LIVE_BASE_URL


class ApiKey(HashedKey):
    """An environment's API key; only its SHA-256 digest is stored, the key is shown once."""

    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="api_keys")

    class Meta(HashedKey.Meta):
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.environment})"


class Registration(models.Model):
    """A sign-up waiting for its email address to be verified; completing it creates the
    merchant. The token sent by mail is this row's id, signed and dated (see
    ``merchants.registration``); ``completed_at`` makes it single use."""

    name = models.CharField(max_length=200)
    email = models.EmailField()
    password = models.CharField(max_length=128, help_text="Hashed, as Django stores passwords.")
    created = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    merchant = models.OneToOneField(
        Merchant, on_delete=models.SET_NULL, null=True, blank=True, related_name="registration"
    )

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.email} ({'completed' if self.completed_at else 'pending'})"


class AccountsVersion(models.Model):
    """One row whose ``number`` changes in the transaction of every write to merchants,
    environments and API keys (except a key's last-used time): database triggers set it (see
    ``common.versioning``). Processes keep the keys they have seen in memory and reuse them
    while this number is the one they read them with, so a revoked key is refused by the very
    next request of every process."""

    number = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"accounts version {self.number}"
