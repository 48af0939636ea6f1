"""Media on an S3-compatible bucket (moto's server on loopback): files go to the bucket, the
service's signed URLs keep their expiry and redirect to short presigned ones, retention
deletes from the bucket."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from rest_framework.test import APIClient

from common.files import file_store, file_url
from orders.pipeline.retention import images_purge_expired
from tests.support.orders import submitted_order_with_files
from tests.support.s3 import Bucket, new_bucket, s3_server

DAY = 24 * 3600


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as endpoint:
        yield endpoint


@pytest.fixture
def bucket(s3_endpoint: str, settings: Any) -> Bucket:
    """A fresh bucket holding the service's media for this test."""
    made = new_bucket(s3_endpoint)
    settings.STORAGES = made.storages(redirect_seconds=120)
    return made


def test_a_stored_file_goes_to_the_bucket_and_leaves_no_local_copy(
    bucket: Bucket, tmp_path: Path
) -> None:
    local = tmp_path / "print.jpg"
    local.write_bytes(b"print file bytes")

    name = file_store(local, "orders/1/assets/2/print.jpg")

    assert name == "orders/1/assets/2/print.jpg"
    assert bucket.keys() == [name]
    assert not local.exists()
    stored = bucket.client().get_object(Bucket=bucket.name, Key=name)
    assert stored["Body"].read() == b"print file bytes"

    # Stored again under the same name: replaced, not renamed
    local.write_bytes(b"second rendering")
    assert file_store(local, name) == name
    assert bucket.keys() == [name]


def test_a_signed_url_keeps_its_expiry_and_redirects_to_a_short_presigned_url(
    bucket: Bucket,
) -> None:
    name = default_storage.save("orders/1/assets/2/print.jpg", ContentFile(b"the print file"))

    # A lab's URL: valid 60 days, the service's own (a presigned URL cannot outlive 7 days)
    url = file_url(name, "http://testserver", max_age_seconds=60 * DAY)
    assert url is not None
    parts = urlsplit(url)
    assert parts.path == "/media/orders/1/assets/2/print.jpg"
    expires = int(parse_qs(parts.query)["expires"][0])
    assert 60 * DAY <= expires - time.time() <= 61 * DAY

    answer = Client().get(f"{parts.path}?{parts.query}")

    assert answer.status_code == 302
    presigned = answer["Location"]
    assert presigned.startswith(f"{bucket.endpoint}/{bucket.name}/orders/1/assets/2/print.jpg?")
    assert parse_qs(urlsplit(presigned).query)["X-Amz-Expires"] == ["120"]
    assert requests.get(presigned, timeout=10).content == b"the print file"
    # The bucket itself refuses the object without a signature (it is private)
    assert requests.get(presigned.split("?")[0], timeout=10).status_code == 403


def test_an_edited_or_expired_url_is_not_redirected(bucket: Bucket) -> None:
    name = default_storage.save("orders/1/thumb.jpg", ContentFile(b"thumb"))
    url = file_url(name, "http://testserver", max_age_seconds=DAY)
    assert url is not None
    parts = urlsplit(url)
    query = parse_qs(parts.query)

    other = Client().get(f"/media/orders/2/thumb.jpg?{parts.query}")
    past = Client().get(
        f"{parts.path}?expires={int(time.time()) - 1}&signature={query['signature'][0]}"
    )

    assert other.status_code == 404 and other.json()["outcome"] == "EndpointDoesNotExist"
    assert past.status_code == 404


@pytest.mark.usefixtures("catalogue")
def test_retention_deletes_an_expired_orders_files_from_the_bucket(
    bucket: Bucket, sandbox_api: APIClient
) -> None:
    _, old = submitted_order_with_files(sandbox_api, days_ago=31)
    _, recent = submitted_order_with_files(sandbox_api, days_ago=29)
    assert bucket.keys() == sorted(old + recent)

    assert images_purge_expired() == 1

    assert bucket.keys() == sorted(recent)
