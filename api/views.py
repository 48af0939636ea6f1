"""The base of every ``/v4.0`` view and the fallbacks for unknown paths and server errors."""

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.views import APIView
from rest_framework.viewsets import ViewSetMixin

from api.envelope import error_response
from api.parsers import JsonBodyParser
from api.renderers import AlwaysJson


class ApiView(APIView):
    """JSON in, JSON out; a body must be declared ``application/json``.

    ``body_required`` lists the methods whose request must carry a JSON body: for them a missing
    Content-Type is ``InvalidContentType`` even when the body is empty.
    """

    content_negotiation_class = AlwaysJson
    body_required: tuple[str, ...] = ("POST", "PUT", "PATCH")

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        content_type = request.content_type or ""
        if (
            request.method in self.body_required or declares_body(request.META)
        ) and not JsonBodyParser.accepts(content_type):
            raise exceptions.UnsupportedMediaType(content_type or "(none)")
        super().initial(request, *args, **kwargs)


def declares_body(meta: Mapping[str, Any]) -> bool:
    """Whether a request's headers announce a body (a length above zero, or a transfer
    encoding)."""
    return meta.get("CONTENT_LENGTH") not in (None, "", "0") or bool(
        meta.get("HTTP_TRANSFER_ENCODING")
    )


class ApiViewSet(ViewSetMixin, ApiView):
    # The base of the public API's viewsets (registered on an ``api.routers.ApiRouter``): an
    # ApiView whose handlers are actions; an @action's extra arguments (such as
    # ``body_required``) set that route's view attributes, ``route_options`` those of the
    # list and detail routes. Operations are described by ApiView's docstring, as they were
    # when every endpoint was an ApiView.
    __doc__ = ApiView.__doc__
    route_options: dict[str, dict[str, Any]] = {}


def validated_input(serializer_class: type[serializers.Serializer], request: Request) -> Any:
    """The body as ``serializer_class`` validates it; invalid input raises the 400 envelope."""
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@csrf_exempt  # an unknown path is a 404 whatever the method, never Django's CSRF page
def endpoint_does_not_exist(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    return error_response("EndpointDoesNotExist", 404, {"path": request.path})


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF refusals: in the error envelope on API paths, Django's page elsewhere (forms)."""
    if request.path.lower().startswith("/v4.0"):
        return error_response("Unauthorized", 403, {"reason": f"CSRF check failed: {reason}"})
    return django_csrf_failure(request, reason)


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return error_response("EndpointDoesNotExist", 404, {"path": request.path})


def server_error(request: HttpRequest) -> JsonResponse:
    return error_response("InternalServerError", 500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return error_response(
        "ValidationFailed",
        400,
        {
            "failures": {
                "body": [{"code": "BadRequest", "description": "The request is malformed."}]
            }
        },
    )


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return error_response("Unauthorized", 401, {"reason": "Not allowed."})
