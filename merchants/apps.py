from django.apps import AppConfig


class MerchantsConfig(AppConfig):
    name = "merchants"
    verbose_name = "Merchants"

    def ready(self) -> None:
        from common.versioning import version_triggers_register
        from common.versions import version_register
        from merchants.models import AccountsVersion
        from merchants.versioning import ACCOUNTS_TRIGGERS

        version_register("accounts", AccountsVersion)
        version_triggers_register(ACCOUNTS_TRIGGERS)
