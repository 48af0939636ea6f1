"""``manage.py create_staff``: creates or updates a staff user and prints a working key."""

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from staff.keys import staff_api_key_digest
from staff.models import ADMINISTRATORS_GROUP, StaffApiKey
from staff.selectors import is_administrator, staff_api_key_authenticate

pytestmark = pytest.mark.django_db


def create_staff(*args: str) -> str:
    out = io.StringIO()
    call_command("create_staff", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_creates_a_staff_user_and_prints_a_new_key() -> None:
    output = create_staff("--username", "ops", "--email", "ops@print.test", "--password", "pw-1")

    assert output.startswith("STAFF_API_KEY=sk_staff_")
    key = output.strip().removeprefix("STAFF_API_KEY=")
    user = User.objects.get(username="ops")
    assert (user.is_staff, user.is_superuser, user.email) == (True, False, "ops@print.test")
    assert user.check_password("pw-1")
    assert not is_administrator(user)
    api_key = staff_api_key_authenticate(key=key)
    assert api_key is not None and api_key.user == user
    assert StaffApiKey.objects.get().digest == staff_api_key_digest(key)
    assert key not in StaffApiKey.objects.values_list("prefix", flat=True).get()


def test_a_given_key_and_the_administrator_role() -> None:
    key = "k" * 24

    output = create_staff("--username", "root", "--api-key", key, "--administrator")

    assert output == f"STAFF_API_KEY={key}\n"
    user = User.objects.get(username="root")
    assert user.groups.filter(name=ADMINISTRATORS_GROUP).exists()
    assert is_administrator(user)
    assert not user.has_usable_password()


def test_running_again_updates_the_user_and_adds_a_key() -> None:
    first = create_staff("--username", "ops").strip().removeprefix("STAFF_API_KEY=")
    User.objects.filter(username="ops").update(is_staff=False, is_active=False)

    second = create_staff("--username", "ops", "--email", "new@print.test", "--administrator")

    second_key = second.strip().removeprefix("STAFF_API_KEY=")
    user = User.objects.get(username="ops")
    assert (user.is_staff, user.is_active, user.email) == (True, True, "new@print.test")
    assert User.objects.count() == 1
    assert is_administrator(user)
    assert staff_api_key_authenticate(key=first) is not None  # several keys stay active
    assert staff_api_key_authenticate(key=second_key) is not None


def test_a_short_key_is_refused_and_nothing_is_created() -> None:
    with pytest.raises(CommandError, match="--api-key must have at least 24 characters"):
        create_staff("--username", "ops", "--api-key", "short")

    assert not User.objects.exists()


def test_a_key_in_use_is_refused_and_nothing_is_created() -> None:
    create_staff("--username", "ops", "--api-key", "x" * 30)

    with pytest.raises(CommandError, match="already in use"):
        create_staff("--username", "other", "--api-key", "x" * 30)

    assert list(User.objects.values_list("username", flat=True)) == ["ops"]


def test_a_blank_username_is_refused() -> None:
    with pytest.raises(CommandError, match="--username must not be empty"):
        create_staff("--username", " ")


def test_superusers_have_the_administrator_role() -> None:
    user = User.objects.create_superuser("boss", "boss@print.test", "a-long-password-1")

    assert is_administrator(user)
