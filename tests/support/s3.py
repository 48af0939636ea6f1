"""An S3-compatible server on loopback (moto's server mode, in its own process) with a
bucket, and the settings that point the service's media at it."""

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from config.media import s3_media_storage
from tests.support.web import free_port, wait_until_listening

ACCESS_KEY = "test-access-key"
SECRET_KEY = "test-secret-key"
REGION = "eu-west-2"


@dataclass(frozen=True)
class Bucket:
    endpoint: str
    name: str

    def environment(self) -> dict[str, str]:
        """The service's settings for media in this bucket (as a deployment sets them)."""
        return {
            "MEDIA_S3_BUCKET": self.name,
            "MEDIA_S3_ENDPOINT_URL": self.endpoint,
            "MEDIA_S3_ACCESS_KEY_ID": ACCESS_KEY,
            "MEDIA_S3_SECRET_ACCESS_KEY": SECRET_KEY,
            "MEDIA_S3_REGION": REGION,
        }

    def storages(self, redirect_seconds: int = 300) -> dict[str, Any]:
        """``STORAGES`` as ``config.settings.base`` builds it from ``environment()``."""
        return {
            "default": s3_media_storage(
                bucket=self.name,
                redirect_seconds=redirect_seconds,
                endpoint_url=self.endpoint,
                region=REGION,
                access_key=ACCESS_KEY,
                secret_key=SECRET_KEY,
            ),
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def keys(self) -> list[str]:
        listed = self.client().list_objects_v2(Bucket=self.name)
        return sorted(entry["Key"] for entry in listed.get("Contents", []))


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3-compatible server on a free loopback port until the block ends; its URL."""
    port = free_port()
    moto = Path(sys.executable).parent / "moto_server"
    process = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(port, process, "moto_server", seconds=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def new_bucket(endpoint: str) -> Bucket:
    bucket = Bucket(endpoint, f"media-{uuid.uuid4().hex[:12]}")
    bucket.client().create_bucket(
        Bucket=bucket.name, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    return bucket
