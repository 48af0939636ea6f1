"""The admin site of the service: titled for it, its first page the service at a glance
(``backoffice.overview``, for staff who may view orders), and its refusals an HTML page of the
admin.

``ServiceAdminConfig`` (in ``INSTALLED_APPS`` in place of ``django.contrib.admin``) makes
``ServiceAdminSite`` the default site, so every app's ``admin.register`` lands here. Each admin
page checks a model or tool permission (``staff.roles``); a ``PermissionDenied`` raised by any
of them is answered with ``admin/403.html`` inside the admin, status 403, never the API's JSON.
"""

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

from django.contrib.admin import AdminSite
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

SERVICE_NAME = "Print Fulfilment back-office"


class ServiceAdminSite(AdminSite):
    site_header = SERVICE_NAME
    site_title = SERVICE_NAME
    index_template = "admin/overview_index.html"

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        # This module is loaded with the app registry (ServiceAdminConfig): models only now.
        from backoffice.overview import VIEW_ORDERS, overview_read

        context = dict(extra_context or {})
        if request.user.has_perm(VIEW_ORDERS):
            now = timezone.now()
            context.update(overview=overview_read(now=now), overview_at=now)
        return super().index(request, context)

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Any:
        def refusing(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            try:
                return view(request, *args, **kwargs)
            except PermissionDenied as refusal:
                return self.permission_denied(request, refusal)

        return super().admin_view(update_wrapper(refusing, view), cacheable)

    def permission_denied(self, request: HttpRequest, refusal: PermissionDenied) -> HttpResponse:
        reason = str(refusal) or "Your role does not allow this page or action."
        response = TemplateResponse(
            request,
            "admin/403.html",
            {**self.each_context(request), "title": "Not allowed", "reason": reason},
            status=403,
        )
        return response.render()


class ServiceAdminConfig(AdminConfig):
    default_site = "backoffice.site.ServiceAdminSite"
