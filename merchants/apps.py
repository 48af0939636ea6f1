from django.apps import AppConfig


class MerchantsConfig(AppConfig):
    name = "merchants"
    verbose_name = "Merchants"

    def ready(self) -> None:
        from common.versions import version_register
        from merchants.models import AccountsVersion

        version_register("accounts", AccountsVersion)
