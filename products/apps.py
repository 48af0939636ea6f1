from django.apps import AppConfig


class ProductsConfig(AppConfig):
    name = "products"

    def ready(self) -> None:
        from common.versions import version_register
        from products.models import CatalogueVersion

        version_register("catalogue", CatalogueVersion)
