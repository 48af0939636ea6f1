"""The two OpenAPI documents as tests read them, and JSON Schema checks of bodies against them.

``MERCHANT_DOCUMENT`` and ``STAFF_DOCUMENT`` are the committed copies (``tests/api/openapi.yaml``
and ``tests/api/openapi-staff.yaml``), which ``tests/api/test_openapi.py`` keeps equal to what
the service generates. ``body_errors`` checks a body against a schema of a document (OpenAPI 3.0:
``nullable`` read as JSON Schema's ``null`` type); ``strict`` also refuses every property the
schema does not declare, as a client generated from the document would not know it.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

DOCUMENTS = Path(__file__).parent.parent / "api"
MERCHANT_DOCUMENT: dict[str, Any] = yaml.safe_load((DOCUMENTS / "openapi.yaml").read_text())
STAFF_DOCUMENT: dict[str, Any] = yaml.safe_load((DOCUMENTS / "openapi-staff.yaml").read_text())


def _json_schema(schema: Any, *, strict: bool) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema 2020-12."""
    if isinstance(schema, list):
        return [_json_schema(value, strict=strict) for value in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {
        key: _json_schema(value, strict=strict)
        for key, value in schema.items()
        if key not in ("nullable", "example", "discriminator")
    }
    for bound in ("Maximum", "Minimum"):  # 3.0's boolean exclusive bounds are numbers now
        if converted.pop(f"exclusive{bound}", False) is True:
            converted[f"exclusive{bound}"] = converted.pop(bound.lower())
    if strict and "properties" in converted and "additionalProperties" not in converted:
        converted["additionalProperties"] = False
    if schema.get("nullable"):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def body_errors(
    document: dict[str, Any], schema: dict[str, Any], body: Any, *, strict: bool = False
) -> list[str]:
    """Each way ``body`` fails ``schema`` (whose ``$ref`` point into ``document``), as
    ``path: message``; none when it validates."""
    root = {
        **_json_schema(schema, strict=strict),
        "components": _json_schema(document.get("components", {}), strict=strict),
    }
    validator = Draft202012Validator(root)
    return [
        f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(body)
    ]


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each operation of the document: its path, method and operation object."""
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def response_schema(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """The schema of the operation's 200 answer."""
    response = document["paths"][path][method]["responses"]["200"]
    return dict(response["content"]["application/json"]["schema"])
