"""Abstract models every app may build on."""

from typing import ClassVar

from django.db import models

from common.ids import PREFIXES, format_id, new_id


class PublicIdModel(models.Model):
    """A row whose primary key is a time-ordered random number (``common.ids.new_id``) shown
    to clients with its type's prefix: ``ord_<pk>``. ``id_kind`` names the prefix."""

    id_kind: ClassVar[str]

    id = models.BigIntegerField(primary_key=True, default=new_id, editable=False)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return format_id(PREFIXES[self.id_kind], self.id)
