from typing import TYPE_CHECKING

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from api.authentication import ApiClient

if TYPE_CHECKING:
    from rest_framework.views import APIView


class ApiKeyRateThrottle(SimpleRateThrottle):
    """A request budget per environment (all of its keys together), else per client address."""

    scope = "api_key"

    def get_cache_key(self, request: Request, view: "APIView") -> str:
        if isinstance(request.user, ApiClient):
            ident = f"env{request.user.environment.pk}"
        else:
            ident = f"ip{self.get_ident(request)}"
        return f"throttle_{self.scope}_{ident}"
