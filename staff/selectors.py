"""Reads for staff users and their keys."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils import timezone

from staff.keys import staff_api_key_digest
from staff.models import ADMINISTRATORS_GROUP, StaffApiKey

_LAST_USED_RESOLUTION_SECONDS = 60


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
        now = timezone.now()
        if (
            api_key.last_used_at is None
            or (now - api_key.last_used_at).total_seconds() > _LAST_USED_RESOLUTION_SECONDS
        ):
            StaffApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
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
