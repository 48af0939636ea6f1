"""Sign-up by email: a pending registration, its signed token, and completing it.

The token is the registration's id signed with the project's secret key and the time it was
made (``django.core.signing.TimestampSigner``), so it cannot be forged or guessed and expires
after ``REGISTRATION_TOKEN_MAX_AGE``; the row's ``completed_at`` makes it single use.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core import signing
from django.db import transaction
from django.utils import timezone

from common.errors import ValidationFailed
from merchants.models import BillingMode, Registration
from merchants.services import CreatedMerchant, merchant_create

REGISTRATION_TOKEN_MAX_AGE = timedelta(hours=48)
_SALT = "merchants.registration"


@dataclass(frozen=True)
class CompletedRegistration:
    created: CreatedMerchant
    user: User


def registration_token(registration: Registration) -> str:
    return signing.TimestampSigner(salt=_SALT).sign(str(registration.pk))


def email_registered(email: str) -> bool:
    """Whether a person already signs in with this address."""
    return User.objects.filter(username__iexact=email.strip()).exists()


def registration_start(*, name: str, email: str, password: str) -> tuple[Registration, str]:
    """Record a sign-up (the password hashed at once) and return it with its token."""
    registration = Registration.objects.create(
        name=name.strip(), email=email.strip().lower(), password=make_password(password)
    )
    return registration, registration_token(registration)


def _invalid(code: str, description: str) -> ValidationFailed:
    return ValidationFailed.single("token", code, description)


@transaction.atomic
def registration_complete(*, token: str) -> CompletedRegistration:
    """Create the merchant (Sandbox and Live, a key each) and the person's sign-in.

    Raises ``ValidationFailed`` on ``token`` for a token that is unknown, expired or used.
    """
    signer = signing.TimestampSigner(salt=_SALT)
    try:
        pk = signer.unsign(token, max_age=REGISTRATION_TOKEN_MAX_AGE)
    except signing.SignatureExpired as exc:
        raise _invalid(
            "TokenExpired", "This registration link has expired; please sign up again."
        ) from exc
    except signing.BadSignature as exc:
        raise _invalid("TokenUnknown", "This registration token is not valid.") from exc
    registration = Registration.objects.select_for_update().filter(pk=pk).first()
    if registration is None:
        raise _invalid("TokenUnknown", "This registration token is not valid.")
    if registration.completed_at is not None:
        raise _invalid("TokenUsed", "This registration link has already been used.")
    if email_registered(registration.email):
        raise _invalid("EmailRegistered", "An account with this email address already exists.")
    # Billing is the service's decision: a merchant who signs up pays by card; only staff
    # switch an account to invoice billing (the admin).
    created = merchant_create(
        name=registration.name, email=registration.email, billing_mode=BillingMode.CARD
    )
    user = User(
        username=registration.email,
        email=registration.email,
        first_name=registration.name[:150],  # a new password is checked against it too
        password=registration.password,
    )
    user.save()
    created.merchant.user = user
    created.merchant.save(update_fields=["user"])
    registration.completed_at = timezone.now()
    registration.merchant = created.merchant
    registration.save(update_fields=["completed_at", "merchant"])
    return CompletedRegistration(created=created, user=user)
