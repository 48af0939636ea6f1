from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client


@pytest.mark.django_db
def test_generating_the_openapi_document_emits_no_warning(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # --fail-on-warn turns every drf-spectacular warning or error into a non-zero exit.
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml")
    )
    assert (tmp_path / "schema.yaml").read_text().startswith("openapi:")


@pytest.mark.django_db
def test_schema_is_served_as_json_and_declares_the_api_key_scheme() -> None:
    for response in (
        Client().get("/v4.0/schema?format=json"),
        Client().get("/v4.0/schema", headers={"Accept": "application/json"}),
    ):
        assert response.status_code == 200
        document = response.json()
        assert document["components"]["securitySchemes"]["ApiKeyAuth"] == {
            "type": "apiKey",
            "in": "header",
            "name": "X-API-Key",
        }
        assert "ErrorEnvelope" in document["components"]["schemas"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/v4.0/docs", "/v4.0/redoc"])
def test_docs_pages_are_served_from_local_assets(path: str) -> None:
    response = Client().get(path)

    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html


STAFF_PATHS = {
    "/v4.0/fulfilmentLocations/{labCode}/capabilities": "get",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/fulfilmentLocationCapabilities": "get",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/maptojson": "get",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/cancel": "post",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/hold": "post",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/unhold": "post",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/updateAddress": "post",
    "/v4.0/orders/{orderId}/shipments/{shipmentId}/updateShippingMethod": "post",
}


@pytest.mark.django_db
def test_staff_endpoints_are_documented_with_the_staff_key_scheme() -> None:
    document = Client().get("/v4.0/schema?format=json").json()

    assert document["components"]["securitySchemes"]["staffApiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    for path, method in STAFF_PATHS.items():
        operation = document["paths"][path][method]
        assert {"staffApiKey": []} in operation["security"], path
        assert {"ApiKeyAuth": []} not in operation["security"], path
        assert "401" in operation["responses"], path
    orders = document["paths"]["/v4.0/orders"]["get"]
    assert {"staffApiKey": []} not in orders["security"]
    schemas = document["components"]["schemas"]
    assert set(schemas["ShipmentOperationResponse"]["properties"]) == {
        "success",
        "message",
        "result",
        "traceParent",
    }
    assert set(schemas["ShipmentOperationOutput"]["properties"]) == {
        "shipmentId",
        "labCode",
        "labOrderReference",
        "operation",
        "shipment",
    }
    assert set(schemas["ShipmentCapabilitiesOutput"]["properties"]) == {
        "labCode",
        "countryCode",
        "capabilities",
    }
    assert set(schemas["LabCapabilitiesOutput"]["properties"]) == {"capabilities"}
    update_address = document["paths"][
        "/v4.0/orders/{orderId}/shipments/{shipmentId}/updateAddress"
    ]["post"]
    body = update_address["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ShipmentAddressInputRequest"}


@pytest.mark.django_db
def test_the_openapi_document_is_exactly_the_committed_copy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The public API's contract: moving endpoints between views, viewsets and routers must not
    # change one byte of it. Regenerate tests/api/openapi.yaml only for a deliberate change.
    call_command("spectacular", "--file", str(tmp_path / "schema.yaml"))

    expected = (Path(__file__).parent / "openapi.yaml").read_text()
    assert (tmp_path / "schema.yaml").read_text() == expected
