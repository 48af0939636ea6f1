"""Writes for staff users, their API keys and the audit log."""

from django.contrib.auth.models import Group, User
from django.db import transaction

from common.errors import ValidationFailed
from common.keys import key_digest_new, key_revoke
from staff.keys import generate_staff_api_key, key_prefix
from staff.models import ADMINISTRATORS_GROUP, AuditEntry, StaffApiKey


def staff_api_key_create(
    *, user: User, name: str = "", key: str | None = None
) -> tuple[StaffApiKey, str]:
    """Create a key for a staff user and return it with its clear text, which is never stored."""
    if not getattr(user, "is_staff", False):
        raise ValidationFailed.single("user", "NotStaff", "Only staff users may hold staff keys.")
    clear = key or generate_staff_api_key()
    digest = key_digest_new(StaffApiKey, clear=clear, label="A staff API key")
    api_key = StaffApiKey.objects.create(
        user=user, name=name, prefix=key_prefix(clear), digest=digest
    )
    return api_key, clear


def staff_api_key_revoke(*, staff_api_key: StaffApiKey) -> None:
    key_revoke(key=staff_api_key)


@transaction.atomic
def staff_user_save(
    *,
    username: str,
    email: str | None = None,
    password: str | None = None,
    administrator: bool = False,
) -> tuple[User, bool]:
    """Create the staff user, or update an existing one (made staff, active, the email and
    password when given); ``administrator`` adds the administrator role, never removes it.
    Returns the user and whether it was created."""
    user, created = User.objects.get_or_create(username=username)
    user.is_staff = True
    user.is_active = True
    if email is not None:
        user.email = email
    if password:
        user.set_password(password)
    elif created:
        user.set_unusable_password()
    user.save()
    if administrator:
        group, _ = Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)
        user.groups.add(group)
    return user, created


def audit_entry_record(
    *,
    user: User | None,
    operation: str,
    success: bool,
    api_key: StaffApiKey | None = None,
    method: str = "",
    path: str = "",
    target: str = "",
    status_code: int | None = None,
    message: str = "",
) -> AuditEntry:
    """Write one line of the audit log (who, when, what, result)."""
    return AuditEntry.objects.create(
        user=user,
        username=user.get_username() if user is not None else "",
        api_key=api_key,
        operation=operation[:80],
        method=method[:10],
        path=path[:500],
        target=target[:200],
        success=success,
        status_code=status_code,
        message=message,
    )
