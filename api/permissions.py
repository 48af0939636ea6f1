from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.authentication import ApiClient

if TYPE_CHECKING:
    from rest_framework.views import APIView


class HasApiKey(BasePermission):
    message = "An X-API-Key header with a valid API key is required."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        return isinstance(request.user, ApiClient)
