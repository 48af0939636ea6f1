"""Standard Webhooks signatures: a fixed vector and the reference verifier."""

import base64
import hashlib
import hmac
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from merchants.keys import generate_signing_secret
from webhooks.signing import InvalidSigningSecret, signature, signature_headers

# The test vector published with the Standard Webhooks specification.
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TIMESTAMP = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_fixed_vector_matches_the_published_signature() -> None:
    assert (
        signature(
            secret=VECTOR_SECRET, msg_id=VECTOR_ID, timestamp=VECTOR_TIMESTAMP, body=VECTOR_BODY
        )
        == VECTOR_SIGNATURE
    )


def test_fixed_vector_matches_a_hand_computed_hmac() -> None:
    key = base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    message = b'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}'
    expected = "v1," + base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode()

    assert expected == VECTOR_SIGNATURE
    assert signature_headers(
        secret=VECTOR_SECRET, msg_id=VECTOR_ID, body=VECTOR_BODY, timestamp=VECTOR_TIMESTAMP
    ) == {
        "webhook-id": VECTOR_ID,
        "webhook-timestamp": "1614265330",
        "webhook-signature": expected,
    }


def test_the_reference_package_verifies_our_headers_for_an_environment_secret() -> None:
    secret = generate_signing_secret()
    body = '{"id": "evt_1", "data": {"order": {"id": "ord_1", "name": "Zoë"}}}'.encode()

    headers = signature_headers(secret=secret, msg_id="evt_1", body=body)

    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 5
    assert Webhook(secret).verify(body, headers) == {
        "id": "evt_1",
        "data": {"order": {"id": "ord_1", "name": "Zoë"}},
    }


def test_the_reference_package_rejects_a_changed_body_or_another_secret() -> None:
    secret = generate_signing_secret()
    body = b'{"id": "evt_1"}'
    headers = signature_headers(secret=secret, msg_id="evt_1", body=body)

    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(b'{"id": "evt_2"}', headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(generate_signing_secret()).verify(body, headers)


@pytest.mark.parametrize("secret", ["whsec_", "whsec_not base64!"])
def test_an_unusable_secret_is_refused(secret: str) -> None:
    with pytest.raises(InvalidSigningSecret):
        signature(secret=secret, msg_id="evt_1", timestamp=1, body=b"{}")
