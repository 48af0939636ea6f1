"""The base of every ``/v4.0`` view and the fallbacks for unknown paths and server errors."""

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
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
        self.read_ahead(request, *args, **kwargs)
        super().initial(request, *args, **kwargs)

    def read_ahead(self, request: HttpRequest | Request, *args: Any, **kwargs: Any) -> None:
        """Called before the request's key is checked: what a view reads then (for a request
        that carries a key this process keeps, of that key's environment's rows only:
        ``api.authentication.kept_key_environment_id``) goes in the statement that reads the
        request's versions (``common.versions.versions_read_with``), which checking the key
        would otherwise run alone. A request its throttles then refuse has paid for the read
        too. Nothing by default."""


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
    #
    # ``lean_get``: the name of an action whose GET without a body is answered the lean way
    # (``lean_dispatch``): its ``lean_<action>`` method gives the body's data.
    __doc__ = ApiView.__doc__
    route_options: dict[str, dict[str, Any]] = {}
    lean_get: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.lean_get is None:
            return
        # The lean way runs these on Django's own request and skips finalize_response: only
        # classes known to read nothing more than it has (headers, META, user) may take it.
        used = [*cls.authentication_classes, *cls.permission_classes, *cls.throttle_classes]
        names = [f"{getattr(c, '__module__', '')}.{getattr(c, '__qualname__', c)}" for c in used]
        unknown = [name for name in names if name not in LEAN_CLASSES]
        if unknown or cls.finalize_response is not APIView.finalize_response:
            raise TypeError(
                f"{cls.__qualname__}.lean_get: the lean way takes only {sorted(LEAN_CLASSES)} "
                f"and the framework's finalize_response; not {unknown or 'its own'}."
            )

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if (
            self.lean_get is None
            or request.method != "GET"
            or self.action_map.get("get") != self.lean_get
            or declares_body(request.META)
        ):
            return super().dispatch(request, *args, **kwargs)
        return self.lean_dispatch(request, *args, **kwargs)

    def lean_dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """The framework's way through a request, on Django's own request: the read ahead,
        authentication, permissions, throttles and the action, in that order, as ``initial``
        takes them, without the framework's request and response objects, its negotiation and
        its rendering chain (a tenth of a GET of an order's CPU). The body is rendered by the
        API's renderer with the headers the framework adds. An exception is answered as the
        framework answers it (``handle_exception``: the error envelope), through a framework
        request made then, which is given what authentication found rather than asked again.

        For this project's authentication, permission and throttle classes (``LEAN_CLASSES``,
        checked when the viewset is defined): they read only what Django's request has too
        (headers, ``META``, ``user``). ``self.request`` is Django's request here, unless an
        exception made the framework's."""
        action = self.lean_get
        assert action is not None  # (dispatch's condition)
        self.args, self.kwargs, self.action = args, kwargs, action
        self.headers = self.default_response_headers
        user: Any = None
        auth: Any = None
        try:
            self.read_ahead(request, *args, **kwargs)
            authenticators = self.get_authenticators()
            authenticated = False
            for authenticator in authenticators:
                found = authenticator.authenticate(request)  # type: ignore[arg-type]
                if found is not None:
                    (user, auth), authenticated = found, True
                    break
            # as the framework sets them on Django's request
            request.user, request.auth = user, auth  # type: ignore[attr-defined]
            for permission in self.get_permissions():
                if not permission.has_permission(request, self):  # type: ignore[arg-type]
                    if authenticators and not authenticated:
                        raise exceptions.NotAuthenticated()
                    raise exceptions.PermissionDenied(
                        getattr(permission, "message", None), getattr(permission, "code", None)
                    )
            self.check_throttles(request)  # type: ignore[arg-type]
            data = getattr(self, f"lean_{action}")(request, *args, **kwargs)
        except Exception as exc:
            framework_request = self.initialize_request(request, *args, **kwargs)
            framework_request.user, framework_request.auth = user, auth
            self.request = framework_request
            self.format_kwarg = self.get_format_suffix(**kwargs)
            renderer, media_type = self.perform_content_negotiation(framework_request)
            framework_request.accepted_renderer = renderer
            framework_request.accepted_media_type = media_type
            response = self.handle_exception(exc)
            return self.finalize_response(framework_request, response, *args, **kwargs)
        renderer = self.get_renderers()[0]  # the framework's choice too (AlwaysJson)
        answer = HttpResponse(
            renderer.render(data), content_type=f"{renderer.media_type}; charset={renderer.charset}"
        )
        for name, value in self.headers.items():
            answer[name] = value
        return answer


# The classes the lean way may run (ApiViewSet.__init_subclass__).
LEAN_CLASSES = frozenset(
    {
        "api.authentication.ApiKeyAuthentication",
        "api.permissions.HasApiKey",
        "api.throttling.ApiKeyRateThrottle",
    }
)


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
