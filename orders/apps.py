from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "orders"

    def ready(self) -> None:
        from common.metrics import scrape_collector_add
        from orders.metrics import pipeline_figures

        scrape_collector_add(pipeline_figures)
