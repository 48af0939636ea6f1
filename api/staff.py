"""The base of the staff endpoints: staff key or staff admin session, the Django permissions
each endpoint needs (those the admin needs for the same operation), and an audit entry for
every operation a staff user makes through them."""

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.viewsets import ViewSetMixin

from api.authentication import StaffApiKeyAuthentication, StaffSessionAuthentication
from api.permissions import HasStaffPermission
from api.views import ApiView
from staff.models import StaffApiKey
from staff.selectors import is_staff_user
from staff.services import audit_entry_record


class StaffApiView(ApiView):
    """``staff_permissions`` are the Django permissions the view needs (its user's role's, as
    in the admin; none named, nobody passes); ``audit_operation`` names what the view does in
    the audit log; ``audit_target`` says what it acted on (from the path)."""

    authentication_classes = [StaffApiKeyAuthentication, StaffSessionAuthentication]
    permission_classes = [HasStaffPermission]
    staff_permissions: tuple[str, ...] = ()
    audit_operation = ""

    def audit_target(self, **kwargs: Any) -> str:
        return " ".join(str(value) for value in kwargs.values())

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        # Only requests that authenticated as staff are staff operations; ``_user`` is unset
        # when the request was refused before authentication (e.g. a wrong content type).
        user = getattr(request, "_user", None)
        if is_staff_user(user):
            data = response.data if isinstance(response.data, dict) else {}
            success = response.status_code < 400 and data.get("success", True) is not False
            auth = getattr(request, "_auth", None)
            audit_entry_record(
                user=user,
                api_key=auth if isinstance(auth, StaffApiKey) else None,
                operation=self.audit_operation or type(self).__name__,
                method=request.method or "",
                path=request.get_full_path(),
                target=self.audit_target(**kwargs),
                success=success,
                status_code=response.status_code,
                message=str(data.get("message") or data.get("statusText") or ""),
            )
        return response


class StaffApiViewSet(ViewSetMixin, StaffApiView):
    # The base of the staff viewsets: a StaffApiView whose handlers are actions (see
    # ``api.views.ApiViewSet``); ``audit_operation``, and ``staff_permissions`` where the
    # viewset's differ by route, are set per route by its @action.
    # Operations are described by StaffApiView's docstring, as before.
    __doc__ = StaffApiView.__doc__
