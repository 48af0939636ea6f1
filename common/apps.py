from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.cache import close_caches
from django.core.cache.backends.base import BaseCache
from django.core.signals import request_finished, request_started
from django.db import connections
from django.db.models.signals import post_migrate
from django.utils.module_loading import import_string


class CommonConfig(AppConfig):
    name = "common"

    def ready(self) -> None:
        local_folders_create()
        from common.db import dropped_connections_closed

        # Once per migrate (or flush), after every app's migrations: the version triggers a
        # table rebuild dropped are put back (common.versioning).
        post_migrate.connect(
            version_triggers_restore, sender=self, dispatch_uid="common.versioning"
        )

        # After Django's own receiver (close_old_connections), which closes expired ones; it
        # looks at PostgreSQL connections only, so a process without one goes without it.
        if any(connections[alias].vendor == "postgresql" for alias in connections):
            request_started.connect(dropped_connections_closed, dispatch_uid="common.db.dropped")
        # Django closes the caches a request used when it ends; with backends whose close does
        # nothing (BaseCache's: file, database, local memory, Redis) that is a walk for nothing.
        if all(
            import_string(cache["BACKEND"]).close is BaseCache.close
            for cache in settings.CACHES.values()
        ):
            request_finished.disconnect(close_caches)


def local_folders_create() -> None:
    """The folders of the embedded default (SQLite files, filesystem broker) and of collected
    static files, made at start-up rather than when settings are imported."""
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and str(database["NAME"]) != ":memory:":
        Path(database["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    if not settings.REDIS_URL:
        Path(settings.RATE_LIMIT_DATABASE).parent.mkdir(parents=True, exist_ok=True)
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        folders = ("data_folder_in", "data_folder_out", "processed_folder", "rejected_folder")
        for key in (*folders, "control_folder"):
            if options.get(key):
                Path(options[key]).mkdir(parents=True, exist_ok=True)


def version_triggers_restore(*, using: str, **kwargs: Any) -> None:
    """After ``migrate``: every registered version trigger present on database ``using``."""
    from common.versioning import version_triggers_ensure

    version_triggers_ensure(connections[using])
