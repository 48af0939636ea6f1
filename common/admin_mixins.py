"""Behaviour shared by the admin classes of several apps."""

from typing import Protocol

from django.contrib import admin
from django.http import HttpRequest


class _HasPublicId(Protocol):
    @property
    def public_id(self) -> str: ...


class PublicIdColumn:
    """Shows a row's public id (``ord_…``, ``evt_…``), the one merchants and logs quote."""

    @admin.display(description="id", ordering="id")
    def public_id(self, row: _HasPublicId) -> str:
        return row.public_id


class NoAddOrDelete:
    """For rows only services write: staff look at them here but never add or delete one."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
