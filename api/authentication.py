"""``X-API-Key`` authentication: the key selects the merchant and the environment."""

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from api.rate_limits import FailOpenRateThrottle
from merchants.models import ApiKey, Environment, Merchant
from merchants.selectors import api_key_authenticate
from staff.models import StaffApiKey
from staff.selectors import is_staff_user, staff_api_key_authenticate

HEADER = "X-API-Key"


def header_key(request: HttpRequest | Request) -> str:
    """The key the request carries in ``X-API-Key`` ("" for none)."""
    return request.headers.get(HEADER, "").strip()


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


class WrongKeyThrottle(FailOpenRateThrottle):
    """Counts requests with a wrong key per client address: guessing keys gets 429s."""

    scope = "wrong_key"

    def get_cache_key(self, request: Request, view: Any) -> str:
        return f"throttle_{self.scope}_{self.get_ident(request)}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ApiClient, ApiKey] | None:
        key = header_key(request)
        if not key:
            return None
        api_key = api_key_authenticate(key=key)
        if api_key is None and staff_api_key_authenticate(key=key) is not None:
            raise exceptions.AuthenticationFailed(
                "A staff API key is not accepted on merchant endpoints: staff act on orders "
                "through the staff endpoints and the admin."
            )
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


class StaffApiKeyAuthentication(authentication.BaseAuthentication):
    """A staff API key in ``X-API-Key``: the request acts as the key's staff user. Any other
    key (a merchant's, a revoked one) is refused, never passed on to another scheme."""

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, StaffApiKey] | None:
        key = header_key(request)
        if not key:
            return None
        staff_key = staff_api_key_authenticate(key=key)
        if staff_key is None:
            guard = WrongKeyThrottle()
            if not guard.allow_request(request, None):  # type: ignore[arg-type]
                raise exceptions.Throttled(wait=guard.wait())
            raise exceptions.AuthenticationFailed(
                "These endpoints need a staff API key or a staff admin session; "
                "the key is not a valid staff key."
            )
        return staff_key.user, staff_key

    def authenticate_header(self, request: Request) -> str:
        return f'ApiKey header="{HEADER}"'


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """A staff user signed in to the admin (unsafe methods need the CSRF token, as in the
    admin); other users' sessions are ignored."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        result = super().authenticate(request)
        if result is None or not is_staff_user(result[0]):
            return None
        return result


class StaffApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.StaffApiKeyAuthentication"
    name = "staffApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": HEADER}


class StaffSessionAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.StaffSessionAuthentication"
    name = "staffSession"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "A staff user signed in to the admin (/admin/).",
        }


def client_environment(request: HttpRequest | Request) -> Environment:
    """The environment selected by the request's API key (views behind ``HasApiKey``)."""
    assert isinstance(request.user, ApiClient)
    return request.user.environment
