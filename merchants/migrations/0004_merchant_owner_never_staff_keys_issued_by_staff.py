"""A merchant's owner is offered among non-staff users only; keys the admin issued named by
their staff user ("issued by ada") are renamed "issued by the service's staff", as the admin
names them now."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

STAFF_ISSUED_KEY_NAME = "issued by the service's staff"


def staff_issued_keys_renamed(apps, schema_editor):  # type: ignore[no-untyped-def]
    api_key_model = apps.get_model("merchants", "ApiKey")
    user_model = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    staff = user_model.objects.filter(models.Q(is_staff=True) | models.Q(is_superuser=True))
    names = [f"issued by {username}" for username in staff.values_list("username", flat=True)]
    api_key_model.objects.filter(name__in=names).update(name=STAFF_ISSUED_KEY_NAME)


class Migration(migrations.Migration):
    dependencies = [
        ("merchants", "0003_accountsversion"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="merchant",
            name="user",
            field=models.OneToOneField(
                blank=True,
                limit_choices_to={"is_staff": False, "is_superuser": False},
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="merchant",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(staff_issued_keys_renamed, migrations.RunPython.noop),
    ]
