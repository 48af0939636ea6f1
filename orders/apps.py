from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "orders"

    def ready(self) -> None:
        from django.conf import settings

        from common.metrics import scrape_collector_add
        from orders.metrics import pipeline_figures
        from orders.payments import payment_provider_check

        scrape_collector_add(pipeline_figures)
        payment_provider_check(settings.PAYMENT_PROVIDER)
