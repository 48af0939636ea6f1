from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client


@pytest.mark.django_db
def test_stored_files_are_served_under_media_url(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    name = default_storage.save("orders/1/thumb.jpg", ContentFile(b"\xff\xd8\xffthumb"))

    response = Client().get(default_storage.url(name))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"\xff\xd8\xffthumb"  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_paths_outside_the_media_folder_are_refused(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "secret.txt").write_text("no")

    response = Client().get("/media/../secret.txt")

    assert response.status_code in (400, 404)
    assert response.json()["outcome"] in ("ValidationFailed", "EndpointDoesNotExist")
