import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

import api.schema
from merchants.keys import generate_signing_secret
from tests.support.openapi import (
    MERCHANT_DOCUMENT,
    body_errors,
    operations,
)
from webhooks.signing import signature_headers

# The staff document is written with drf-spectacular's custom settings for it.
STAFF_OPTIONS = ["--custom-settings", "api.schema.STAFF_DOCUMENT"]
COPIES = {"merchant": ("openapi.yaml", []), "staff": ("openapi-staff.yaml", STAFF_OPTIONS)}
SERVED = {"merchant": "/v4.0/schema?format=json", "staff": "/v4.0/staff/schema?format=json"}


@pytest.mark.django_db
@pytest.mark.parametrize("document", sorted(COPIES))
def test_generating_the_openapi_documents_emits_no_warning(tmp_path, document: str) -> None:  # type: ignore[no-untyped-def]
    # --fail-on-warn turns every drf-spectacular warning or error into a non-zero exit.
    _, options = COPIES[document]
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        *options,
        "--file",
        str(tmp_path / "schema.yaml"),
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
@pytest.mark.parametrize(
    ("path", "schema"),
    [
        ("/v4.0/docs", "/v4.0/schema"),
        ("/v4.0/redoc", "/v4.0/schema"),
        ("/v4.0/staff/redoc", "/v4.0/staff/schema"),
    ],
)
def test_docs_pages_are_served_from_local_assets_and_show_their_document(
    path: str, schema: str
) -> None:
    response = Client().get(path)

    assert response.status_code == 200
    html = response.content.decode()
    if "redoc" in path:  # the bundle served by api.redoc (its logo swapped for a local image)
        assert '<script src="/redoc/bundles/redoc.standalone.js">' in html
        assert Client().get("/redoc/bundles/redoc.standalone.js").status_code == 200
    else:
        assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html
    assert f'"{schema}"' in html


def _is_staff(operation: dict[str, Any]) -> bool:
    return any("staffApiKey" in entry for entry in operation.get("security", []))


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


STAFF_BACKOFFICE_PATHS = {
    "/v4.0/micro-ui/bulk-resubmission/form-options": "get",
    "/v4.0/micro-ui/bulk-resubmission/spreadsheet-info": "get",
    "/v4.0/micro-ui/bulk-resubmission/spreadsheet-data": "get",
    "/v4.0/micro-ui/bulk-resubmission/review": "post",
    "/v4.0/micro-ui/bulk-resubmission/submit": "post",
    "/v4.0/micro-ui/siteflow-shipping/bulk-update": "post",
}


@pytest.mark.django_db
def test_the_merchant_document_has_no_staff_operation_and_the_staff_document_only_those() -> None:
    merchant = Client().get("/v4.0/schema?format=json").json()
    staff = Client().get("/v4.0/staff/schema?format=json").json()

    staff_paths = {**STAFF_PATHS, **STAFF_BACKOFFICE_PATHS}
    assert {path: list(methods) for path, methods in staff["paths"].items()} == {
        path: [method] for path, method in sorted(staff_paths.items())
    }
    assert not set(staff_paths) & set(merchant["paths"])
    assert not [path for path, _, op in operations(merchant) if _is_staff(op)]
    assert set(merchant["components"]["securitySchemes"]) == {"ApiKeyAuth"}
    assert set(staff["components"]["securitySchemes"]) == {"staffApiKey", "staffSession"}
    assert {tag["name"] for tag in merchant["tags"]} == {
        "Orders",
        "Quotes",
        "Products",
        "Registration",
        "Service",
    }
    assert staff["info"]["title"] == "Print Fulfilment Staff API"
    assert "/v4.0/redoc" in staff["info"]["description"]
    assert "staff" not in merchant["info"]["description"].lower()


@pytest.mark.django_db
def test_staff_endpoints_are_documented_with_the_staff_key_scheme() -> None:
    document = Client().get("/v4.0/staff/schema?format=json").json()

    assert document["components"]["securitySchemes"]["staffApiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    for path, method in {**STAFF_PATHS, **STAFF_BACKOFFICE_PATHS}.items():
        operation = document["paths"][path][method]
        assert {"staffApiKey": []} in operation["security"], path
        assert {"ApiKeyAuth": []} not in operation["security"], path
        assert "401" in operation["responses"], path
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
@pytest.mark.parametrize("document", sorted(COPIES))
def test_each_openapi_document_is_exactly_its_committed_copy(tmp_path, document: str) -> None:  # type: ignore[no-untyped-def]
    # The API's contract: moving endpoints between views, viewsets and routers must not change
    # one byte of it. Regenerate tests/api/openapi.yaml (`manage.py spectacular --file ...`)
    # and tests/api/openapi-staff.yaml (the same with --custom-settings
    # api.schema.STAFF_DOCUMENT) only for a deliberate change.
    name, options = COPIES[document]
    call_command("spectacular", *options, "--file", str(tmp_path / "schema.yaml"))

    expected = (Path(__file__).parent / name).read_text()
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
@pytest.mark.parametrize("document", sorted(SERVED))
def test_every_text_of_the_documents_is_written_for_the_reader_of_the_api(document: str) -> None:
    served = Client().get(SERVED[document]).json()

    texts = list(_texts(served))
    assert len(texts) > 100
    for at, text in texts:
        assert not IMPLEMENTATION_WORDS.search(text), (at, text)
        # Code samples may name their variables; prose names fields as the wire does.
        assert not SNAKE_CASE_NAME.search(CODE_BLOCK.sub("", text)), (at, text)
        # The reader has the document, not the texts it was written from.
        assert "not in the specification" not in text.lower(), (at, text)


def test_the_word_check_catches_the_notes_it_is_for() -> None:
    for note in (
        "An input serializer that refuses fields it does not declare.",
        "``body_required`` lists the methods whose request must carry a JSON body.",
        "audit_operation names what the view does in the audit log.",
        "Extra kwargs go to the queryset.",
    ):
        text = CODE_BLOCK.sub("", note)
        assert IMPLEMENTATION_WORDS.search(text) or SNAKE_CASE_NAME.search(text), note


TAGS = {
    "merchant": ["Orders", "Quotes", "Products", "Registration", "Service"],
    "staff": ["Staff: shipments and labs", "Staff: back-office tools"],
}


@pytest.mark.django_db
@pytest.mark.parametrize("document", sorted(SERVED))
def test_tags_come_in_their_readers_order_in_one_case_and_every_operation_has_one(
    document: str,
) -> None:
    served = Client().get(SERVED[document]).json()

    names = [tag["name"] for tag in served["tags"]]
    assert names == TAGS[document]
    for tag in served["tags"]:
        assert tag["name"] == tag["name"][0].upper() + tag["name"][1:].lower(), tag["name"]
        assert tag["description"]
    for path, method, operation in operations(served):
        assert len(operation["tags"]) == 1 and operation["tags"][0] in names, (path, method)
        assert _is_staff(operation) == (document == "staff"), (path, method)


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


def _property_schemas(schema: Any, at: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property of an object schema and of the schemas nested in it, with its path."""
    if not isinstance(schema, dict):
        return
    for name, value in schema.get("properties", {}).items():
        yield f"{at}.{name}", value
        yield from _property_schemas(value, f"{at}.{name}")
    for key in ("items", "additionalProperties"):
        yield from _property_schemas(schema.get(key), f"{at}[{key}]")
    for key in ("allOf", "oneOf", "anyOf"):
        for index, part in enumerate(schema.get(key, [])):
            yield from _property_schemas(part, f"{at}.{key}[{index}]")


@pytest.mark.django_db
@pytest.mark.parametrize("document", sorted(SERVED))
def test_every_field_and_parameter_of_the_documents_has_a_description(document: str) -> None:
    served = Client().get(SERVED[document]).json()

    fields = [
        (at, schema)
        for name, component in served["components"]["schemas"].items()
        for at, schema in _property_schemas(component, name)
    ]
    parameters = [
        (f"{path} {method} {parameter['name']}", parameter)
        for path, method, operation in operations(served)
        for parameter in operation.get("parameters", [])
    ]
    assert len(fields) > 100
    assert [at for at, schema in fields + parameters if not schema.get("description")] == []


def _examples(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Every example of the document with the schema it shows: the request and response
    examples of each operation, and those of schemas and their properties."""
    for path, method, operation in operations(document):
        bodies = [("request", operation.get("requestBody", {}))]
        bodies += list(operation.get("responses", {}).items())
        for name, body in bodies:
            for media in body.get("content", {}).values():
                for title, example in media.get("examples", {}).items():
                    yield f"{path} {method} {name} {title}", media["schema"], example["value"]
    for name, component in document["components"]["schemas"].items():
        if "example" in component:
            yield name, component, component["example"]
        for at, schema in _property_schemas(component, name):
            if "example" in schema:
                yield at, schema, schema["example"]


@pytest.mark.django_db
@pytest.mark.parametrize("document", sorted(SERVED))
def test_every_example_of_the_documents_is_a_body_its_schema_declares(document: str) -> None:
    served = Client().get(SERVED[document]).json()

    examples = list(_examples(served))
    assert len(examples) >= (5 if document == "merchant" else 2)
    for at, schema, value in examples:
        assert body_errors(served, schema, value, strict=True) == [], at


@pytest.mark.django_db
def test_the_merchant_documents_examples_are_a_created_order_and_an_error() -> None:
    served = Client().get(SERVED["merchant"]).json()
    create = served["paths"]["/v4.0/orders"]["post"]

    [created] = create["responses"]["200"]["content"]["application/json"]["examples"].values()
    error = served["components"]["schemas"]["ErrorEnvelope"]["example"]
    assert created["value"]["outcome"] == "Created"
    assert created["value"]["order"]["id"].startswith("ord_")
    assert error["outcome"] == "ValidationFailed" and error["data"]["failures"]


def test_the_example_check_refuses_a_body_its_schema_does_not_declare() -> None:
    schema = {"$ref": "#/components/schemas/ErrorEnvelope"}
    error = MERCHANT_DOCUMENT["components"]["schemas"]["ErrorEnvelope"]["example"]

    assert body_errors(MERCHANT_DOCUMENT, schema, error, strict=True) == []
    assert body_errors(MERCHANT_DOCUMENT, schema, {**error, "outcome": "string"})
    assert body_errors(MERCHANT_DOCUMENT, schema, {**error, "extra": 1}, strict=True)
    assert body_errors(MERCHANT_DOCUMENT, schema, {**error, "statusCode": None})


ENUMERATIONS = {
    "OrderResponse": {"outcome": ["Created", "CreatedWithIssues", "AlreadyExists", "Ok"]},
    "CancelResponse": {"outcome": ["Cancelled", "FailedToCancel", "ActionNotAvailable"]},
    "StatusOutput": {"stage": ["OnHold", "AwaitingPayment", "InProgress", "Complete", "Cancelled"]},
    "ShipmentOutput": {"status": ["Processing", "Shipped", "Cancelled"]},
    "ItemOutput": {"status": ["NotYetDownloaded", "Ok", "Invalid"]},
    "AssetOutput": {"status": ["InProgress", "Complete", "Error"]},
    "DetailsOutput": {"shipping": ["NotStarted", "InProgress", "Complete", "Error"]},
}


def _enum(document: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    for part in [schema, *schema.get("allOf", []), *schema.get("oneOf", [])]:
        if "$ref" in part:
            return _enum(document, document["components"]["schemas"][part["$ref"].split("/")[-1]])
        if "enum" in part:
            return list(part["enum"])
    return []


@pytest.mark.django_db
def test_outcomes_stages_and_statuses_list_their_values() -> None:
    schemas = MERCHANT_DOCUMENT["components"]["schemas"]

    for component, fields in ENUMERATIONS.items():
        for field, values in fields.items():
            schema = schemas[component]["properties"][field]
            assert _enum(MERCHANT_DOCUMENT, schema) == values, (component, field)


def test_oms_id_is_an_int64_in_requests_and_a_string_in_answers_and_urls_typed_once() -> None:
    schemas = MERCHANT_DOCUMENT["components"]["schemas"]
    create = schemas["OrderCreateInputRequest"]["properties"]

    for component in ("OrderCreateInputRequest", "ItemInputRequest", "AssetInputRequest"):
        oms_id = dict(schemas[component]["properties"]["omsId"])
        assert oms_id.pop("description")
        assert oms_id == {"type": "integer", "format": "int64", "nullable": True}, component
    for component in ("OrderOutput", "ItemOutput", "AssetOutput"):
        assert schemas[component]["properties"]["omsId"]["type"] == "string", component
    callback_url = dict(create["callbackUrl"])
    assert callback_url.pop("description")
    assert callback_url == {
        "type": "string",
        "format": "uri",
        "minLength": 1,
        "maxLength": 2000,
        "nullable": True,
    }
    assert create["metadata"]["type"] == "object"


# The generator of Python clients, installed with the project's development tools.
CLIENT_GENERATOR = Path(sys.executable).with_name("openapi-python-client")
STAFF_PATH_PARTS = ("micro-ui", "/shipments/", "fulfilmentLocations", "maptojson")


@pytest.mark.django_db
def test_a_client_generated_from_the_merchant_document_builds_without_a_warning_or_staff_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "schema.json").write_bytes(Client().get(SERVED["merchant"]).content)
    # Its default formats the code with ruff afterwards: not what is checked here.
    (tmp_path / "config.yaml").write_text("post_hooks: []\n")

    result = subprocess.run(
        [
            str(CLIENT_GENERATOR),
            "generate",
            "--path",
            str(tmp_path / "schema.json"),
            "--config",
            str(tmp_path / "config.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / "client"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower() and "error" not in output.lower(), output
    calls = {
        module.stem: module.read_text() for module in (tmp_path / "client" / "api").rglob("*.py")
    }
    assert {"orders_create", "orders_get", "quotes_create", "products_get"} <= set(calls)
    assert [
        name for name, code in calls.items() if any(part in code for part in STAFF_PATH_PARTS)
    ] == []


ADMIN_TEMPLATES = Path(__file__).parents[2] / "templates" / "admin"


@pytest.mark.django_db
def test_the_admin_links_the_staff_document(staff_session: Any) -> None:
    linking = [
        template.relative_to(ADMIN_TEMPLATES)
        for template in ADMIN_TEMPLATES.rglob("*.html")
        if "{% url 'staff-redoc' %}" in template.read_text()
    ]

    page = staff_session.get("/admin/")

    assert linking == [Path("base_site.html")]
    assert page.status_code == 200
    assert '<a href="/v4.0/staff/redoc">Staff API</a>' in page.content.decode()
