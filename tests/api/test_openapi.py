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
