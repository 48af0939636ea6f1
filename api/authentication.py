"""``X-API-Key`` authentication: the key selects the merchant and the environment."""

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from merchants.models import ApiKey, Environment, Merchant
from merchants.selectors import api_key_authenticate

HEADER = "X-API-Key"


@dataclass(frozen=True)
class ApiClient:
    """Who is calling: stands in ``request.user`` for API requests."""

    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False

    @property
    def environment(self) -> Environment:
        return self.api_key.environment

    @property
    def merchant(self) -> Merchant:
        return self.api_key.environment.merchant


class WrongKeyThrottle(SimpleRateThrottle):
    """Counts requests with a wrong key per client address: guessing keys gets 429s."""

    scope = "wrong_key"

    def get_cache_key(self, request: Request, view: Any) -> str:
        return f"throttle_{self.scope}_{self.get_ident(request)}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ApiClient, ApiKey] | None:
        key = request.headers.get(HEADER, "").strip()
        if not key:
            return None
        api_key = api_key_authenticate(key=key)
        if api_key is None:
            guard = WrongKeyThrottle()
            if not guard.allow_request(request, None):  # type: ignore[arg-type]
                raise exceptions.Throttled(wait=guard.wait())
            raise exceptions.AuthenticationFailed("The API key is not valid or has been revoked.")
        return ApiClient(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return f'ApiKey header="{HEADER}"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": HEADER}


def client_environment(request: Request) -> Environment:
    """The environment selected by the request's API key (views behind ``HasApiKey``)."""
    assert isinstance(request.user, ApiClient)
    return request.user.environment
