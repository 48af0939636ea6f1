from typing import TYPE_CHECKING

from rest_framework.request import Request

from api.authentication import ApiClient
from api.rate_limits import FailOpenRateThrottle

if TYPE_CHECKING:
    from rest_framework.views import APIView


class ApiKeyRateThrottle(FailOpenRateThrottle):
    """A request budget per environment (all of its keys together), else per client address."""

    scope = "api_key"

    def get_cache_key(self, request: Request, view: "APIView") -> str:
        if isinstance(request.user, ApiClient):
            ident = f"env{request.user.environment.pk}"
        else:
            ident = f"ip{self.get_ident(request)}"
        return f"throttle_{self.scope}_{ident}"
