from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "API plumbing"

    def ready(self) -> None:
        from api import browser  # noqa: F401 -- registers its deployment check
