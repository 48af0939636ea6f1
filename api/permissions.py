from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.authentication import ApiClient
from api.exceptions import RoleRequired
from staff.selectors import is_administrator, is_staff_user

if TYPE_CHECKING:
    from rest_framework.views import APIView


class HasApiKey(BasePermission):
    message = "An X-API-Key header with a valid API key is required."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        return isinstance(request.user, ApiClient)


class IsStaff(BasePermission):
    message = "A staff API key (X-API-Key) or a staff admin session is required."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        return is_staff_user(request.user)


class IsAdministrator(BasePermission):
    """Staff with the administrator role; other staff get a 401 that says the role is needed."""

    message = "The administrator role is required for this operation."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        if not is_staff_user(request.user):
            return False
        if not is_administrator(request.user):
            raise RoleRequired(self.message)
        return True
