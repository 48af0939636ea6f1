"""Every /v4.0 endpoint is an action of a viewset that an app's ApiRouter registered, as the
design card says ("DRF viewsets implement the public API"): no plain view can come back."""

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.test import APIClient
from rest_framework.viewsets import ViewSetMixin

from api.routers import ApiRouter
from api.routing import canonical_api_path
from api.views import ApiView
from merchants.services import CreatedMerchant
from staff.models import ADMINISTRATORS_GROUP
from tests.support.openapi import MERCHANT_DOCUMENT, STAFF_DOCUMENT

# The two OpenAPI documents and their viewers: drf-spectacular's views, not API endpoints.
DOCUMENTATION = {"v4.0/schema", "v4.0/docs", "v4.0/redoc", "v4.0/staff/schema", "v4.0/staff/redoc"}
# Every route is documented: merchants' routes in the merchants' document, staff routes in the
# staff document (no path is in both).
MERCHANT_PATHS = {
    path: operations
    for path, operations in MERCHANT_DOCUMENT["paths"].items()
    if path.startswith("/v4.0/")
}
STAFF_PATHS = dict(STAFF_DOCUMENT["paths"])
PATHS = {**MERCHANT_PATHS, **STAFF_PATHS}
OPERATIONS = [
    (path, method, operation)
    for path, operations in PATHS.items()
    for method, operation in operations.items()
]
# The order in which DRF lists a view's methods in the Allow header.
METHOD_ORDER = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def api_routes(
    patterns: list[URLPattern | URLResolver], prefix: str = "", urlconf: Any = None
) -> Iterator[tuple[str, URLPattern, Any]]:
    """Each ``/v4.0`` route: its full route text, its pattern, the module that declares it."""
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from api_routes(pattern.url_patterns, route, pattern.urlconf_module)
        elif route.startswith("v4.0/") and route not in DOCUMENTATION:
            yield route, pattern, urlconf


def as_route(path: str) -> str:
    """``/v4.0/orders/{orderId}`` as its route is written: ``v4.0/orders/<str:orderId>``."""
    return re.sub(r"\{(\w+)\}", r"<str:\1>", path.removeprefix("/"))


def test_every_api_route_is_a_viewset_route_registered_by_its_apps_api_router() -> None:
    routes = list(api_routes(get_resolver().url_patterns))

    assert not set(MERCHANT_PATHS) & set(STAFF_PATHS)
    assert sorted(route for route, _, _ in routes) == sorted(
        {as_route(path) for path, _, _ in OPERATIONS}
    )
    for route, pattern, urlconf in routes:
        router = getattr(urlconf, "router", None)
        assert isinstance(router, ApiRouter), route
        assert any(pattern is registered for registered in router.urls), route
        view = pattern.callback.cls  # type: ignore[attr-defined]
        assert issubclass(view, ViewSetMixin) and issubclass(view, ApiView), route
        assert view in [viewset for _, viewset, _ in router.registry], route


@pytest.mark.parametrize(
    ("path", "method"), [(path, method) for path, method, _ in OPERATIONS], ids=str
)
def test_every_documented_operation_is_a_viewset_action_in_any_letter_case(
    path: str, method: str
) -> None:
    concrete = re.sub(r"\{\w+\}", "x1", path)
    views = set()
    for spelling in (concrete, concrete.upper(), concrete.lower() + "/"):
        match = resolve(canonical_api_path(spelling, settings.ROOT_URLCONF))
        handler = match.func.actions[method]  # type: ignore[attr-defined]
        assert callable(getattr(match.func.cls, handler)), spelling  # type: ignore[attr-defined]
        views.add(match.func)
    assert len(views) == 1


@pytest.fixture
def clients(
    merchant: CreatedMerchant, staff_user: Any, staff_api: APIClient
) -> dict[str | None, APIClient]:
    """A client for each security scheme of the document (the staff user administers)."""
    staff_user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
    merchant_api = APIClient()
    merchant_api.credentials(HTTP_X_API_KEY=merchant.sandbox_api_key)
    return {"ApiKeyAuth": merchant_api, "staffApiKey": staff_api, None: APIClient()}


@pytest.mark.django_db
@pytest.mark.parametrize("path", sorted({path for path, _, _ in OPERATIONS}))
def test_a_method_a_path_does_not_document_is_405_allowing_exactly_the_documented_ones(
    path: str, clients: dict[str | None, APIClient]
) -> None:
    documented = PATHS[path]
    schemes = {
        name for op in documented.values() for entry in op.get("security", []) for name in entry
    }
    client = clients[next(iter(schemes & {"ApiKeyAuth", "staffApiKey"}), None)]

    response = client.delete(re.sub(r"\{\w+\}", "x1", path))

    assert (response.status_code, response.json()["outcome"]) == (405, "MethodNotAllowed")
    allowed = {m.upper() for m in documented} | {"OPTIONS"}
    if "GET" in allowed:
        allowed.add("HEAD")
    assert response["Allow"] == ", ".join(m for m in METHOD_ORDER if m in allowed)


@pytest.mark.django_db
def test_route_options_name_the_list_and_detail_routes_and_set_their_body_rule(
    clients: dict[str | None, APIClient],
) -> None:
    api = clients["ApiKeyAuth"]
    names = {
        path: api.options(path).json()["name"]
        for path in ("/v4.0/orders", "/v4.0/orders/ord_1", "/v4.0/orders/ord_1/actions")
    }
    # Without a body or a Content-Type: the list route wants JSON only for POST, so a PUT is
    # refused for its method; the detail route wants it for every writing method.
    put_list, put_detail = api.put("/v4.0/orders"), api.put("/v4.0/orders/ord_1")

    assert names == {
        "/v4.0/orders": "Orders",
        "/v4.0/orders/ord_1": "Order Detail",
        "/v4.0/orders/ord_1/actions": "Order Actions",
    }
    assert (put_list.status_code, put_list.json()["outcome"]) == (405, "MethodNotAllowed")
    assert (put_detail.status_code, put_detail.json()["outcome"]) == (415, "InvalidContentType")
