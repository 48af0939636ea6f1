"""Reads for staff users and their keys."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from common.keys import key_use_record
from staff.keys import staff_api_key_digest
from staff.models import ADMINISTRATORS_GROUP, StaffApiKey


def staff_api_key_authenticate(*, key: str) -> StaffApiKey | None:
    """The active key with this clear text whose user is an active staff user, or None."""
    api_key = (
        StaffApiKey.objects.select_related("user")
        .filter(
            digest=staff_api_key_digest(key),
            revoked_at__isnull=True,
            user__is_active=True,
            user__is_staff=True,
        )
        .first()
    )
    if api_key is not None:
        key_use_record(key=api_key)
    return api_key


def is_staff_user(user: AbstractBaseUser | AnonymousUser | None) -> bool:
    return bool(user is not None and user.is_active and getattr(user, "is_staff", False))


def is_administrator(user: AbstractBaseUser | AnonymousUser | None) -> bool:
    """Staff with the administrator role: superusers, and members of ``Administrators``."""
    if not is_staff_user(user):
        return False
    if getattr(user, "is_superuser", False):
        return True
    groups = getattr(user, "groups", None)
    return groups is not None and groups.filter(name=ADMINISTRATORS_GROUP).exists()
