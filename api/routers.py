"""The router of the public API's viewsets.

Routes are Django ``path()`` routes without a trailing slash (``orders/<str:orderId>``), as the
specification writes them, so the case-insensitive routing (``api.routing``) reads their literal
segments and the OpenAPI document names their parameters exactly as before.
"""

from typing import Any

from rest_framework.routers import Route, SimpleRouter
from rest_framework.viewsets import ViewSetMixin

_STANDARD_ROUTES = {"{basename}-list": "list", "{basename}-detail": "detail"}


class ApiRouter(SimpleRouter):
    def __init__(self) -> None:
        super().__init__(trailing_slash=False, use_regex_path=False)

    def get_routes(self, viewset: type[ViewSetMixin]) -> list[Route]:
        """As ``@action``'s extra arguments set its route's view attributes, a viewset's
        ``route_options["list"]`` and ``["detail"]`` set those of the list route
        (``list``, ``create``) and the detail route (``retrieve``); a ``name`` there
        replaces the router's ``List`` / ``Instance`` suffix."""
        options: dict[str, dict[str, Any]] = getattr(viewset, "route_options", {})
        routes = []
        for route in super().get_routes(viewset):
            extra = options.get(_STANDARD_ROUTES.get(route.name, ""), {})
            if extra:
                initkwargs = dict(route.initkwargs)
                if "name" in extra:
                    initkwargs.pop("suffix", None)  # a view takes a name or a suffix, not both
                route = route._replace(initkwargs={**initkwargs, **extra})
            routes.append(route)
        return routes
