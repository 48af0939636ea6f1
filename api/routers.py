"""The router of the public API's viewsets.

Routes are Django ``path()`` routes without a trailing slash (``orders/<str:orderId>``), as the
specification writes them, so the case-insensitive routing (``api.routing``) reads their literal
segments and the OpenAPI document names their parameters exactly as before.
"""

from rest_framework.routers import SimpleRouter


class ApiRouter(SimpleRouter):
    def __init__(self) -> None:
        super().__init__(trailing_slash=False, use_regex_path=False)
