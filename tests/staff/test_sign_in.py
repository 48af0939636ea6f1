"""Staff sign-in to the admin: guessing passwords locks the account out (django-axes), and
sessions end."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture
def ops(db: None) -> User:
    return User.objects.create_user("ops", "ops@example.com", PASSWORD, is_staff=True)


def sign_in(client: Client, password: str) -> Any:
    return client.post("/admin/login/?next=/admin/", {"username": "ops", "password": password})


def test_wrong_passwords_lock_the_account_out_even_for_the_right_one(
    ops: User, settings: Any
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()

    statuses = [sign_in(client, f"guess-{n}").status_code for n in range(3)]
    locked = sign_in(client, PASSWORD)

    assert statuses[:2] == [200, 200]  # the form again, with its error
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_successful_sign_in_before_the_limit_resets_the_count(ops: User, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    sign_in(client, "guess-1")
    sign_in(client, "guess-2")

    assert sign_in(client, PASSWORD).status_code == 302
    assert client.session["_auth_user_id"] == str(ops.pk)


def test_a_forwarded_address_does_not_escape_the_lockout(ops: User, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    for n in range(2):
        Client(HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").post(
            "/admin/login/", {"username": "ops", "password": f"guess-{n}"}
        )

    again = Client(HTTP_X_FORWARDED_FOR="198.51.100.9").post(
        "/admin/login/", {"username": "ops", "password": PASSWORD}
    )

    assert again.status_code == 429


def test_sessions_end_after_eight_hours_by_default(settings: Any) -> None:
    assert settings.SESSION_COOKIE_AGE == 8 * 3600
