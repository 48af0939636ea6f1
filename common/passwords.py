"""Password rules beyond Django's own (``AUTH_PASSWORD_VALIDATORS``)."""

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError


class NotOnlyWhitespaceValidator:
    """Refuses a password made of spaces, tabs or line breaks alone."""

    def validate(self, password: str, user: AbstractBaseUser | None = None) -> None:
        if not password.strip():
            raise ValidationError(
                "This password is only spaces; use letters, digits or symbols.",
                code="password_only_whitespace",
            )

    def get_help_text(self) -> str:
        return "Your password cannot be only spaces."
