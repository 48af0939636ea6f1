import logging

from django.apps import AppConfig
from django.conf import settings

logger = logging.getLogger(__name__)

PRODUCTION_SETTINGS = "config.settings.production"


class LabsConfig(AppConfig):
    name = "labs"

    def ready(self) -> None:
        from common.versioning import version_triggers_register
        from labs.versioning import LAB_TRIGGERS

        version_triggers_register(LAB_TRIGGERS)
        if settings.SIMULATOR_PRODUCES_LIVE and settings.SETTINGS_MODULE == PRODUCTION_SETTINGS:
            logger.warning(
                "SIMULATOR_PRODUCES_LIVE is on under the production settings: Live orders at "
                "labs without a real connector are made by the lab simulator. No parcel leaves "
                "any lab for them; their tracking and admin pages say 'simulated'."
            )
