"""The API plumbing rules of decisions.md, exercised through probe endpoints and real routes."""

import json
import re
from typing import Any

import pytest
from django.test import Client

from merchants.services import CreatedMerchant

TRACE = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
ECHO = "/v4.0/testProbes/echo"
VALID_BODY = {
    "name": "A",
    "address": {"line1": "1 High St", "countryCode": "GB"},
    "items": [{"copies": 1}],
}


@pytest.fixture(autouse=True)
def probe_routes(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ROOT_URLCONF = "tests.support.plumbing_urls"


@pytest.fixture
def client(merchant: CreatedMerchant) -> Client:
    return Client(headers={"X-API-Key": merchant.sandbox_api_key})


def assert_envelope(response, status: int, outcome: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["outcome"] == outcome
    assert body["statusCode"] == status
    assert isinstance(body["statusText"], str) and body["statusText"]
    assert isinstance(body["data"], dict)
    assert TRACE.match(body["traceParent"])
    assert response["traceParent"] == body["traceParent"]
    return body


def test_valid_key_reaches_the_view_with_trace_in_header_and_body(client: Client) -> None:
    response = client.post(ECHO, VALID_BODY, content_type="application/json")

    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "Ok"
    assert body["echo"]["address"]["countryCode"] == "GB"
    assert TRACE.match(body["traceParent"]) and response["traceParent"] == body["traceParent"]


@pytest.mark.django_db
def test_missing_key_is_401_json() -> None:
    body = assert_envelope(Client().get(ECHO), 401, "Unauthorized")
    assert "not provided" in body["data"]["reason"]


@pytest.mark.django_db
def test_wrong_key_is_401_json(merchant: CreatedMerchant) -> None:
    response = Client(headers={"X-API-Key": merchant.sandbox_api_key + "x"}).get(ECHO)
    body = assert_envelope(response, 401, "Unauthorized")
    assert "not valid" in body["data"]["reason"]


def test_revoked_key_is_401(merchant: CreatedMerchant, client: Client) -> None:
    from merchants.models import ApiKey
    from merchants.services import api_key_revoke

    for key in ApiKey.objects.filter(environment__kind="Sandbox"):
        api_key_revoke(api_key=key)

    assert_envelope(client.get(ECHO), 401, "Unauthorized")


@pytest.mark.django_db
def test_unknown_path_is_endpoint_does_not_exist_even_without_key() -> None:
    body = assert_envelope(Client().get("/v4.0/nothing/here"), 404, "EndpointDoesNotExist")
    assert body["data"]["path"] == "/v4.0/nothing/here"


@pytest.mark.django_db
def test_unknown_path_outside_the_api_is_json_too() -> None:
    assert_envelope(Client().get("/no-such-page"), 404, "EndpointDoesNotExist")


def test_unsupported_method_is_405(client: Client) -> None:
    body = assert_envelope(client.delete(ECHO), 405, "MethodNotAllowed")
    assert body["data"]["method"] == "DELETE"


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
def test_wrong_content_type_is_415(client: Client, content_type: str) -> None:
    response = client.post(ECHO, json.dumps(VALID_BODY), content_type=content_type)
    assert_envelope(response, 415, "InvalidContentType")


def test_missing_content_type_is_415(client: Client) -> None:
    response = client.generic("POST", ECHO, json.dumps(VALID_BODY).encode(), content_type="")
    assert_envelope(response, 415, "InvalidContentType")


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "text/json", "application/merge+json"]
)
def test_json_media_type_variants_are_accepted(client: Client, content_type: str) -> None:
    response = client.post(ECHO, json.dumps(VALID_BODY), content_type=content_type)
    assert response.status_code == 200


def test_malformed_json_is_validation_failed(client: Client) -> None:
    response = client.post(ECHO, '{"name": ', content_type="application/json")
    body = assert_envelope(response, 400, "ValidationFailed")
    assert [f["code"] for f in body["data"]["failures"]["body"]] == ["MalformedJson"]


def test_unknown_and_invalid_fields_are_all_reported_with_paths(client: Client) -> None:
    payload = {
        "name": "A",
        "address": {"line1": "x", "countryCode": "GBR", "flat": "2"},
        "items": [{"copies": 1}, {"copies": 0, "colour": "red"}],
        "extra": True,
    }
    body = assert_envelope(
        client.post(ECHO, payload, content_type="application/json"), 400, "ValidationFailed"
    )

    failures = body["data"]["failures"]
    assert set(failures) == {
        "extra",
        "address.flat",
        "address.countryCode",
        "items[1].copies",
        "items[1].colour",
    }
    assert failures["extra"] == [{"code": "UnknownField", "description": "Unknown field."}]
    assert failures["items[1].copies"][0]["code"] == "MinValue"
    assert failures["address.countryCode"][0]["code"] == "MaxLength"


def test_missing_required_fields_are_named(client: Client) -> None:
    body = assert_envelope(
        client.post(ECHO, {}, content_type="application/json"), 400, "ValidationFailed"
    )
    assert {path: f[0]["code"] for path, f in body["data"]["failures"].items()} == {
        "name": "Required",
        "address": "Required",
        "items": "Required",
    }


def test_a_json_array_body_is_validation_failed_not_500(client: Client) -> None:
    response = client.post(ECHO, "[1, 2]", content_type="application/json")
    assert_envelope(response, 400, "ValidationFailed")


def test_incoming_traceparent_continues_its_trace(client: Client) -> None:
    incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    response = client.get(ECHO, headers={"traceparent": incoming})

    trace = response.json()["traceParent"]
    assert trace.split("-")[1] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace.split("-")[2] != "00f067aa0ba902b7"
    assert response["traceParent"] == trace


def test_invalid_incoming_traceparent_starts_a_new_trace(client: Client) -> None:
    response = client.get(ECHO, headers={"traceparent": "garbage"})
    assert TRACE.match(response.json()["traceParent"])


def test_errors_carry_the_continued_trace_too(client: Client) -> None:
    incoming = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"
    body = client.get("/v4.0/nowhere", headers={"traceparent": incoming}).json()
    assert body["traceParent"].startswith("00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-")


def test_paths_are_case_insensitive_and_ignore_a_trailing_slash(client: Client) -> None:
    for path in ("/V4.0/TESTPROBES/ECHO", "/v4.0/testprobes/Echo/", "/v4.0/TestProbes/echo"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.json()["outcome"] == "Ok"


def test_query_parameter_names_are_case_insensitive_and_bracket_arrays_fold(client: Client) -> None:
    response = client.get(ECHO + "?TOP=5&orderIds=a&ORDERIDS[]=b&orderids[]=c")
    assert response.json()["query"] == {"top": ["5"], "orderids": ["a", "b", "c"]}


def test_unhandled_error_is_500_json(client: Client) -> None:
    assert_envelope(client.get("/v4.0/testProbes/crash"), 500, "InternalServerError")


def test_not_found_entity_is_404_entity_not_found(client: Client) -> None:
    assert_envelope(client.get("/v4.0/testProbes/missing/ord_1"), 404, "EntityNotFound")


def test_request_past_the_deadline_is_timed_out(client: Client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.REQUEST_TIMEOUT_SECONDS = 0.3
    assert_envelope(client.get("/v4.0/testProbes/slow?seconds=5"), 500, "TimedOut")


def test_too_many_requests_is_429_with_retry_after(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.cache import cache

    from api.throttling import ApiKeyRateThrottle

    cache.clear()
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "2/min"})

    assert [client.get(ECHO).status_code for _ in range(2)] == [200, 200]
    response = client.get(ECHO)

    body = assert_envelope(response, 429, "TooManyRequests")
    assert int(response["Retry-After"]) >= 1
    assert body["data"]["retryAfterSeconds"] > 0
    cache.clear()


def test_accept_header_never_turns_an_error_into_html(client: Client) -> None:
    response = client.get("/v4.0/nothing", headers={"Accept": "text/html"})
    assert_envelope(response, 404, "EndpointDoesNotExist")
    response = client.delete(ECHO, headers={"Accept": "text/html"})
    assert_envelope(response, 405, "MethodNotAllowed")


@pytest.mark.django_db
def test_guessing_keys_is_throttled_per_address(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.cache import cache

    from api.authentication import WrongKeyThrottle

    cache.clear()
    monkeypatch.setattr(WrongKeyThrottle, "THROTTLE_RATES", {"wrong_key": "3/min"})
    guesser = Client(headers={"X-API-Key": "sk_sandbox_not_a_real_key_000"})

    assert [guesser.get(ECHO).status_code for _ in range(3)] == [401, 401, 401]
    response = guesser.get(ECHO)

    assert_envelope(response, 429, "TooManyRequests")
    assert int(response["Retry-After"]) >= 1
    cache.clear()


@pytest.mark.django_db
def test_a_forwarded_for_header_does_not_reset_the_wrong_key_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.core.cache import cache

    from api.authentication import WrongKeyThrottle

    cache.clear()
    monkeypatch.setattr(WrongKeyThrottle, "THROTTLE_RATES", {"wrong_key": "3/min"})
    guesser = Client(headers={"X-API-Key": "sk_sandbox_not_a_real_key_000"})

    statuses = [
        guesser.get(ECHO, headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code
        for n in range(4)
    ]

    assert statuses == [401, 401, 401, 429]
    cache.clear()


@pytest.mark.django_db
def test_with_the_cache_down_requests_are_let_through_not_500(
    settings: Any, merchant: CreatedMerchant
) -> None:
    from api.rate_limits import RATE_LIMIT_FAILURES

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # nothing listens on the discard port
        }
    }
    before = RATE_LIMIT_FAILURES["count"]
    client = Client(headers={"X-API-Key": merchant.sandbox_api_key})
    wrong = Client(headers={"X-API-Key": "sk_sandbox_not_a_real_key_000"})

    assert client.get(ECHO).status_code == 200
    assert_envelope(wrong.get(ECHO), 401, "Unauthorized")
    assert RATE_LIMIT_FAILURES["count"] >= before + 2
