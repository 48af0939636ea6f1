from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.authentication import ApiClient
from api.exceptions import PermissionRequired, RoleRequired
from staff.roles import OPERATOR_PERMISSIONS
from staff.selectors import is_staff_user

if TYPE_CHECKING:
    from rest_framework.views import APIView


class HasApiKey(BasePermission):
    message = "An X-API-Key header with a valid API key is required."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        return isinstance(request.user, ApiClient)


class HasStaffPermission(BasePermission):
    """Staff whose Django permissions include every one the view names
    (``staff_permissions``): exactly what their role may do in the admin; a user with no role
    passes nowhere, and neither does a view that names no permission.

    Staff without them are refused with a text naming the role the operation needs: 401 for
    an administrators' operation (decisions.md, the Site Flow bulk shipping update), 403 for
    the others."""

    def has_permission(self, request: Request, view: "APIView") -> bool:
        if not is_staff_user(request.user):
            return False  # 401: no staff key, nor a staff session
        needed: tuple[str, ...] = getattr(view, "staff_permissions", ())
        if needed and request.user.has_perms(needed):
            return True
        if not set(needed) <= set(OPERATOR_PERMISSIONS):
            raise RoleRequired("The administrator role is required for this operation.")
        raise PermissionRequired("The operator role is required for this operation.")
