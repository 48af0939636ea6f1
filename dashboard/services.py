"""The dashboard's own writes: a sign-up and its verification mail."""

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.mail import send_mail

from merchants.models import Registration
from merchants.registration import (
    REGISTRATION_TOKEN_MAX_AGE,
    email_registered,
    registration_start,
)

VERIFY_PATH = "/dashboard/verify"


def dashboard_base_url() -> str:
    """Where the dashboard's mailed links point: ``LIVE_BASE_URL`` (where its pay page is,
    decisions.md), never a request's ``Host`` or ``X-Forwarded-Host``, which whoever sends the
    request chooses."""
    return str(settings.LIVE_BASE_URL).rstrip("/")


def registration_signup(*, name: str, email: str, password: str) -> Registration | None:
    """Record the sign-up, then mail its verification link (through ``EMAIL_URL``'s backend),
    built on ``dashboard_base_url``.

    For an address that already has an account nothing is recorded: its owner is mailed instead
    (how to sign in or reset the password), and the person signing up sees what anyone does,
    so the form tells no one which addresses have accounts. The password is hashed either way,
    so the answer takes as long. None then."""
    base_url = dashboard_base_url()
    if email_registered(email):
        make_password(password)
        send_mail(
            "Someone tried to sign up with your email address",
            "Hello,\n\n"
            "Someone (perhaps you) tried to create an account with this email address, which "
            "already has one. Nothing was changed.\n\n"
            f"To sign in: {base_url}/dashboard/login\n"
            f"Forgotten your password? {base_url}/dashboard/password-reset\n\n"
            "If it was not you, you can ignore this mail.\n",
            settings.DEFAULT_FROM_EMAIL,
            [email],
        )
        return None
    registration, token = registration_start(name=name, email=email, password=password)
    link = f"{base_url}{VERIFY_PATH}?token={token}"
    hours = int(REGISTRATION_TOKEN_MAX_AGE.total_seconds() // 3600)
    send_mail(
        "Confirm your email address",
        f"Hello {registration.name},\n\n"
        f"Please confirm your email address to create your account:\n\n{link}\n\n"
        f"The link works once, for {hours} hours. If you did not sign up, ignore this mail.\n",
        settings.DEFAULT_FROM_EMAIL,
        [registration.email],
    )
    return registration
