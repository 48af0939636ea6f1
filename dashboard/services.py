"""The dashboard's own writes: a sign-up and its verification mail."""

from django.conf import settings
from django.core.mail import send_mail

from merchants.models import Registration
from merchants.registration import REGISTRATION_TOKEN_MAX_AGE, registration_start

VERIFY_PATH = "/dashboard/verify"


def registration_signup(*, name: str, email: str, password: str, base_url: str) -> Registration:
    """Record the sign-up, then mail its verification link (through ``EMAIL_URL``'s backend)."""
    registration, token = registration_start(name=name, email=email, password=password)
    link = f"{base_url.rstrip('/')}{VERIFY_PATH}?token={token}"
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
