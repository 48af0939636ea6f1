"""Stored files are served only through signed, unexpired URLs (``common.files``)."""

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client

from common.files import file_url

pytestmark = pytest.mark.django_db
BASE = "http://testserver"


@pytest.fixture
def stored(settings: Any, tmp_path: Path) -> dict[str, str]:
    settings.MEDIA_ROOT = tmp_path
    return {
        kind: default_storage.save(f"orders/1/{kind}", ContentFile(f"{kind} bytes".encode()))
        for kind in ("thumbnail.jpg", "source.jpeg", "print.jpg")
    }


def fetch(url: str) -> Any:
    parts = urlsplit(url)
    return Client().get(f"{parts.path}?{parts.query}" if parts.query else parts.path)


def test_a_signed_url_serves_its_file(stored: dict[str, str]) -> None:
    response = fetch(file_url(stored["thumbnail.jpg"], BASE, max_age_seconds=60) or "")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"thumbnail.jpg bytes"


def test_unsigned_and_edited_urls_are_a_json_404(stored: dict[str, str]) -> None:
    thumbnail = file_url(stored["thumbnail.jpg"], BASE, max_age_seconds=60) or ""
    parts = urlsplit(thumbnail)
    swapped = thumbnail.replace("thumbnail.jpg", "source.jpeg")

    for url in (
        default_storage.url(stored["source.jpeg"]),  # no signature
        default_storage.url(stored["print.jpg"]),
        swapped,  # the thumbnail's signature on the original
        f"{parts.path}?expires={parse_qs(parts.query)['expires'][0]}&signature=forged",
        f"{parts.path}?expires=%C2%B2&signature=forged",  # a superscript two: no number
        f"{parts.path}?expires=%EF%BC%91%EF%BC%92&signature=forged",  # full-width digits
    ):
        response = fetch(url)
        assert response.status_code == 404, url
        assert response.json()["outcome"] == "EndpointDoesNotExist"


def test_an_expired_url_is_refused(stored: dict[str, str], monkeypatch: Any) -> None:
    url = file_url(stored["thumbnail.jpg"], BASE, max_age_seconds=60) or ""
    expires = int(parse_qs(urlsplit(url).query)["expires"][0])
    monkeypatch.setattr(time, "time", lambda: expires + 1)

    assert fetch(url).status_code == 404


def test_an_expiry_moved_later_breaks_the_signature(stored: dict[str, str]) -> None:
    url = file_url(stored["thumbnail.jpg"], BASE, max_age_seconds=60) or ""
    query = parse_qs(urlsplit(url).query)
    later = urlencode(
        {"expires": int(query["expires"][0]) + 86400, "signature": query["signature"][0]}
    )

    assert fetch(f"{urlsplit(url).path}?{later}").status_code == 404


def test_the_same_file_has_the_same_url_all_day(stored: dict[str, str]) -> None:
    first = file_url(stored["print.jpg"], BASE, max_age_seconds=3600)
    assert file_url(stored["print.jpg"], BASE, max_age_seconds=3600) == first


def test_paths_outside_the_media_folder_are_refused(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "secret.txt").write_text("no")

    response = Client().get("/media/../secret.txt")

    assert response.status_code in (400, 404)
    assert response.json()["outcome"] in ("ValidationFailed", "EndpointDoesNotExist")
