"""Writes for staff users, their API keys and the audit log."""

from typing import Any

from django.apps import apps as django_apps
from django.contrib.auth.models import User
from django.db import transaction

from common.errors import ValidationFailed
from common.keys import key_digest_new, key_revoke
from staff.keys import generate_staff_api_key, key_prefix
from staff.models import ADMINISTRATORS_GROUP, AuditEntry, StaffApiKey
from staff.roles import OPERATORS_GROUP, ROLES


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
def staff_roles_sync(*, apps: Any = django_apps, strict: bool = True) -> dict[str, Any]:
    """Make the ``Operators`` and ``Administrators`` groups hold exactly their role's
    permissions (``staff.roles``); ``apps`` is a migration's historical registry when a
    migration calls it, where a permission of a model not made yet is left for a later
    migration (``strict=False``). Returns the groups by name."""
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    wanted = {name for names in ROLES.values() for name in names}
    found = {
        f"{app_label}.{codename}": pk
        for pk, app_label, codename in permission_model.objects.filter(
            content_type__app_label__in={name.split(".")[0] for name in wanted}
        ).values_list("pk", "content_type__app_label", "codename")
    }
    missing = sorted(wanted - set(found))
    if missing and strict:
        raise LookupError(f"Permissions missing (migrate first): {', '.join(missing)}")
    groups = {}
    for name, permissions in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        group.permissions.set([found[p] for p in permissions if p in found])
        groups[name] = group
    return groups


def staff_roles_migrate(apps: Any, schema_editor: Any) -> dict[str, Any]:
    """``staff_roles_sync`` inside a migration (``RunPython``): the permissions Django makes
    only after every migration has run are made first, for the groups to hold them; those of
    models later migrations make are left to a later roles migration."""
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, verbosity=0, using=schema_editor.connection.alias, apps=apps)
        app_config.models_module = None
    return staff_roles_sync(apps=apps, strict=False)


@transaction.atomic
def staff_user_save(
    *,
    username: str,
    email: str | None = None,
    password: str | None = None,
    administrator: bool = False,
) -> tuple[User, bool]:
    """Create the staff user, or update an existing one (made staff, active, the email and
    password when given), always an operator; ``administrator`` adds the administrator role,
    never removes it. The roles' groups are made again as ``staff.roles`` says. Returns the
    user and whether it was created. A merchant's owner is never made staff (ValidationFailed):
    its dashboard account would gain the admin."""
    user, created = User.objects.get_or_create(username=username)
    owned = None if created else getattr(user, "merchant", None)
    if owned is not None:
        raise ValidationFailed.single(
            "username",
            "MerchantOwner",
            f"{username} owns the merchant account {owned}; "
            "a merchant's owner is never a staff account.",
        )
    user.is_staff = True
    user.is_active = True
    if email is not None:
        user.email = email
    if password:
        user.set_password(password)
    elif created:
        user.set_unusable_password()
    user.save()
    groups = staff_roles_sync()
    user.groups.add(groups[OPERATORS_GROUP])
    if administrator:
        user.groups.add(groups[ADMINISTRATORS_GROUP])
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
