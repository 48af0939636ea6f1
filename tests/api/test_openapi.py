import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

import api.schema
from merchants.keys import generate_signing_secret
from webhooks.signing import signature_headers


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


def _texts(document: Any, at: str = "") -> Iterator[tuple[str, str]]:
    """Every summary, description and title in the document, with where it is."""
    if isinstance(document, dict):
        for key, value in document.items():
            if key in ("summary", "description", "title") and isinstance(value, str):
                yield f"{at}.{key}", value
            yield from _texts(value, f"{at}.{key}")
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _texts(value, f"{at}[{index}]")


# Notes for the code's reader that must not reach the API's: framework words, Python names.
IMPLEMENTATION_WORDS = re.compile(
    r"serializ|queryset|kwargs|docstring|viewset|(?<!`)``(?!`)|\.py\b|\bORM\b|\bself\.",
    re.IGNORECASE,
)
# (Ids such as `shp_123` are wire values: a snake_case name has a letter after the underscore.)
SNAKE_CASE_NAME = re.compile(r"\b[a-z][a-z0-9]*_[a-z][a-z0-9_]*\b")
CODE_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


@pytest.mark.django_db
def test_every_text_of_the_document_is_written_for_the_reader_of_the_api() -> None:
    document = Client().get("/v4.0/schema?format=json").json()

    texts = list(_texts(document))
    assert len(texts) > 100
    for at, text in texts:
        assert not IMPLEMENTATION_WORDS.search(text), (at, text)
        # Code samples may name their variables; prose names fields as the wire does.
        assert not SNAKE_CASE_NAME.search(CODE_BLOCK.sub("", text)), (at, text)


def test_the_word_check_catches_the_notes_it_is_for() -> None:
    for note in (
        "An input serializer that refuses fields it does not declare.",
        "``body_required`` lists the methods whose request must carry a JSON body.",
        "audit_operation names what the view does in the audit log.",
        "Extra kwargs go to the queryset.",
    ):
        text = CODE_BLOCK.sub("", note)
        assert IMPLEMENTATION_WORDS.search(text) or SNAKE_CASE_NAME.search(text), note


MERCHANT_TAGS = ["Orders", "Quotes", "Products"]


@pytest.mark.django_db
def test_tags_come_in_a_merchants_order_in_one_case_and_every_operation_has_one() -> None:
    document = Client().get("/v4.0/schema?format=json").json()

    names = [tag["name"] for tag in document["tags"]]
    assert names[:3] == MERCHANT_TAGS
    assert names[3:] == ["Registration", "Service", *[n for n in names if n.startswith("Staff")]]
    for tag in document["tags"]:
        assert tag["name"] == tag["name"][0].upper() + tag["name"][1:].lower(), tag["name"]
        assert tag["description"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert len(operation["tags"]) == 1 and operation["tags"][0] in names, (path, method)
            staff = {"staffApiKey": []} in operation.get("security", [])
            assert staff == operation["tags"][0].startswith("Staff"), (path, method)


@pytest.mark.django_db
def test_the_document_opens_with_an_introduction_for_merchants() -> None:
    introduction = Client().get("/v4.0/schema?format=json").json()["info"]["description"]

    headings = re.findall(r"^#+ (.+)$", CODE_BLOCK.sub("", introduction), flags=re.MULTILINE)
    assert headings == [
        "Authentication",
        "Sandbox and Live",
        "Idempotency",
        "Callbacks",
        "Verifying a callback's signature",
        "Rate limits",
        "Errors",
    ]
    assert "X-API-Key" in introduction and "Retry-After" in introduction


def _introductions_verifier() -> Callable[[str, dict[str, str], bytes], bool]:
    introduction = (Path(api.schema.__file__).with_name("introduction.md")).read_text()
    (sample,) = re.findall(r"^```python\n(.*?)^```", introduction, re.MULTILINE | re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(sample, namespace)  # the sample as a merchant would paste it
    return namespace["callback_verified"]  # type: ignore[no-any-return]


def test_the_introductions_signature_sample_verifies_the_services_callbacks() -> None:
    callback_verified = _introductions_verifier()
    secret, old_secret = generate_signing_secret(), generate_signing_secret()
    body = b'{"id": "evt_1", "type": "com.service.order.status.stage.changed#Complete"}'
    headers = signature_headers(secret=secret, msg_id="evt_1", body=body)

    assert callback_verified(secret, headers, body)
    assert not callback_verified(secret, headers, body.replace(b"Complete", b"Cancelled"))
    assert not callback_verified(old_secret, headers, body)
    stale = signature_headers(
        secret=secret, msg_id="evt_1", body=body, timestamp=int(time.time()) - 600
    )
    assert not callback_verified(secret, stale, body)
    # During a rotation the delivery carries a signature of each secret: either verifies.
    rotating = signature_headers(secret=secret, msg_id="evt_1", body=body, also=[old_secret])
    assert callback_verified(old_secret, rotating, body)
    assert callback_verified(secret, rotating, body)
