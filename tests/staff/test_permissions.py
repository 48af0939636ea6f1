"""``HasStaffPermission`` on an administrators' operation: staff without the role get a 401
that says the role is required."""

from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory

from api.staff import StaffApiView
from staff.models import ADMINISTRATORS_GROUP

pytestmark = pytest.mark.django_db


class AdministratorProbe(StaffApiView):
    staff_permissions = ("backoffice.run_siteflow_shipping",)
    audit_operation = "probe"

    def get(self, request: Request) -> Response:
        return Response({"success": True})


def probe(key: str | None) -> Any:
    headers = {"X-API-Key": key} if key else {}
    request = APIRequestFactory().get("/v4.0/probe", headers=headers)
    return AdministratorProbe.as_view()(request)


def test_staff_without_the_role_is_unauthorized_with_a_reason(staff_key: str) -> None:
    response = probe(staff_key)

    assert response.status_code == 401
    assert response.data["outcome"] == "Unauthorized"
    assert response.data["statusText"] == "The administrator role is required for this operation."


def test_an_administrator_passes(staff_user: Any, staff_key: str) -> None:
    staff_user.groups.add(Group.objects.get(name=ADMINISTRATORS_GROUP))

    assert probe(staff_key).status_code == 200


def test_no_key_is_unauthorized_without_mentioning_the_role() -> None:
    response = probe(None)

    assert response.status_code == 401
    assert response.data["statusText"] == "Credentials are missing or incorrect."
