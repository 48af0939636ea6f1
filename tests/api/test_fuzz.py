"""Schemathesis fuzzes every documented operation: no input, however odd, gets a 500 or a
response outside the documented shapes."""

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from config.wsgi import application
from tests.merchants.factories import merchant_with_keys
from tests.support.orders import BASE_ORDER

schema = schemathesis.openapi.from_wsgi("/v4.0/schema?format=json", application)
FUZZ_KEY = "sk_sandbox_fuzzing_key_0000001"


@pytest.fixture(autouse=True)
def fuzz_merchant(catalogue: None) -> Iterator[None]:
    merchant_with_keys(name="Fuzz", sandbox_api_key=FUZZ_KEY)
    # As Django's test client does: keep the test's connection (and transaction) open
    # across requests made through the WSGI application.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_documented_operation_fails_on_any_input(case: Any) -> None:
    if (
        case.operation.method.upper() == "POST"
        and case.operation.path == "/v4.0/orders"
        and case.body is None
    ):
        case.body = BASE_ORDER
    response = case.call(headers={"X-API-Key": FUZZ_KEY})
    assert response.status_code < 500, (
        case.operation.path,
        response.status_code,
        response.text[:500],
    )
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), (
        response.headers
    )
    if response.status_code >= 400:
        body = response.json()
        assert {"outcome", "statusCode", "statusText", "data", "traceParent"} <= set(body)
