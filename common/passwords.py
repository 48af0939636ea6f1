"""Password rules beyond Django's own (``AUTH_PASSWORD_VALIDATORS``)."""

import re

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


class GuessabilityValidator:
    """Refuses a password zxcvbn estimates an attacker would guess in fewer than about 10^8
    tries (a score under ``min_score``, 3 of 4 by default): a common password dressed up
    (``Passw0rd!!``), a repeat (``abcabcabca``, ``1111111111a``), a keyboard run, or words of
    the account itself (its email address and names are given to the estimator). Only the
    first 72 characters are weighed (the estimator's own limit): a longer password is refused
    only when that much of it is weak."""

    MAX_WEIGHED = 72

    def __init__(self, min_score: int = 3) -> None:
        self.min_score = min_score

    def validate(self, password: str, user: AbstractBaseUser | None = None) -> None:
        from zxcvbn import zxcvbn

        estimate = zxcvbn(password[: self.MAX_WEIGHED], user_inputs=_account_words(user))
        if estimate["score"] >= self.min_score:
            return
        feedback = estimate["feedback"]
        advice = " ".join([feedback["warning"], *feedback["suggestions"]]).strip()
        raise ValidationError(
            "This password is too easy to guess." + (f" {advice}" if advice else ""),
            code="password_too_guessable",
        )

    def get_help_text(self) -> str:
        return (
            "Your password must be hard to guess: not a common password with a few changes, "
            "a repeat or a keyboard run. A few unrelated words do well."
        )


def _account_words(user: AbstractBaseUser | None) -> list[str]:
    """The account's email address, names and their parts, as the estimator's known words."""
    words: list[str] = []
    for attribute in ("username", "email", "first_name", "last_name"):
        value = str(getattr(user, attribute, "") or "").strip()
        if value:
            words.append(value)
            words += [part for part in re.split(r"[^\w]+", value) if len(part) > 2]
    return words
