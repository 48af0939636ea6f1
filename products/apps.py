from django.apps import AppConfig


class ProductsConfig(AppConfig):
    name = "products"

    def ready(self) -> None:
        from common.versioning import version_triggers_register
        from common.versions import version_register
        from products.models import CatalogueVersion
        from products.versioning import TABLES, catalogue_triggers

        version_register("catalogue", CatalogueVersion)
        version_triggers_register(catalogue_triggers(TABLES))
