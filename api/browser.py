"""The middleware only a browser's request needs, skipped by API calls that cannot carry it.

Sessions, CSRF, signed-in users and messages serve people signed in to the admin
and the dashboard. A call to ``/v4.0`` without a session cookie (a merchant's or staff key, or
no credential at all) and ``GET /healthz`` use none of them: ``BrowserMiddleware`` runs them as
one inner chain, in their usual order, for every other request and passes those two straight
on. A staff member's call with the admin's session cookie still goes through all of them (the
staff endpoints accept that session).

Built from the middleware protocol only: each inner middleware is made with the next one as
its ``get_response``, and their ``process_view`` hooks (CSRF's check) run from this one's, which
Django calls at this position.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Warning, register
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from api.routing import API_PREFIX

BROWSER_MIDDLEWARE = (
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
)

HEALTH_PATH = "/healthz"


def is_browserless(request: HttpRequest) -> bool:
    """An API call without a session cookie, or the health check."""
    path = request.path_info
    if path == HEALTH_PATH:
        return True
    lowered = path[: len(API_PREFIX) + 1].lower()
    return (lowered == API_PREFIX or lowered == API_PREFIX + "/") and (
        settings.SESSION_COOKIE_NAME not in request.COOKIES
    )


class BrowserMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        chain = get_response
        inner = []
        for name in reversed(BROWSER_MIDDLEWARE):
            chain = import_string(name)(chain)
            inner.append(chain)
        self.browser_chain = chain
        self.view_hooks = [
            middleware.process_view
            for middleware in reversed(inner)
            if hasattr(middleware, "process_view")
        ]

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_browserless(request):
            return self.get_response(request)
        return self.browser_chain(request)

    def process_view(
        self,
        request: HttpRequest,
        view: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        if is_browserless(request):
            return None
        for hook in self.view_hooks:
            response = hook(request, view, args, kwargs)
            if response is not None:
                return response
        return None


@register(deploy=True)
def browser_cookies_check(**kwargs: Any) -> list[CheckMessage]:
    """Django's deployment check of the CSRF cookie (security.W016) looks for the CSRF
    middleware in MIDDLEWARE by name, so it does not see it inside this one: checked here."""
    if "api.browser.BrowserMiddleware" in settings.MIDDLEWARE and not (
        settings.CSRF_USE_SESSIONS or settings.CSRF_COOKIE_SECURE
    ):
        return [
            Warning(
                "CSRF_COOKIE_SECURE is not True: the admin's and dashboard's CSRF cookie would "
                "be sent over plain HTTP.",
                id="api.W001",
            )
        ]
    return []
