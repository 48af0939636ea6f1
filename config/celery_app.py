"""The Celery application. Tasks carry ids only; durable state lives in the database."""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_ready.connect
@signals.worker_process_init.connect
def _long_lived_objects_frozen(**_kwargs: object) -> None:
    """A worker's main process once it is ready (a thread pool's tasks run there) and each
    prefork child once started: what is loaded by then is kept out of the garbage collector's
    full collections (``common.memory``)."""
    from common.memory import long_lived_objects_frozen

    long_lived_objects_frozen()
