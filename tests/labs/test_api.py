"""GET /v4.0/fulfilmentLocations/{labCode}/capabilities: staff only, the lab's setting."""

import pytest
from rest_framework.test import APIClient

from staff.models import AuditEntry
from tests.labs.factories import LabFactory

pytestmark = pytest.mark.django_db


def path(code: str) -> str:
    return f"/v4.0/fulfilmentLocations/{code}/capabilities"


def test_capabilities_of_a_lab_in_the_vocabularys_order(staff_api: APIClient) -> None:
    LabFactory(code="gb7", capabilities=["updateShippingMethod", "cancel", "hold"])

    response = staff_api.get(path("gb7"))

    assert response.status_code == 200
    body = response.json()
    assert body.pop("traceParent").startswith("00-")
    assert body == {
        "success": True,
        "result": {"capabilities": ["cancel", "hold", "updateShippingMethod"]},
        "message": "",
    }


def test_a_lab_without_capabilities_answers_an_empty_list(staff_session: APIClient) -> None:
    LabFactory(code="us9", capabilities=[])

    response = staff_session.get("/v4.0/FulfilmentLocations/US9/Capabilities")

    assert response.status_code == 200
    assert response.json()["result"] == {"capabilities": []}


def test_an_unknown_lab_is_not_found(staff_api: APIClient) -> None:
    response = staff_api.get(path("zz1"))

    assert response.status_code == 404
    assert response.json()["outcome"] == "EntityNotFound"
    [entry] = AuditEntry.objects.all()
    assert (entry.operation, entry.target, entry.success, entry.status_code) == (
        "fulfilmentLocation.capabilities",
        "zz1",
        False,
        404,
    )


def test_a_merchant_key_or_no_key_is_unauthorized(sandbox_api: APIClient, api: APIClient) -> None:
    LabFactory(code="gb7")

    for client in (sandbox_api, api):
        response = client.get(path("gb7"))
        assert response.status_code == 401
        assert response.json()["outcome"] == "Unauthorized"
    assert not AuditEntry.objects.exists()
