import pytest
import pyvips
from django.test import Client


@pytest.mark.django_db
def test_the_demo_photo_is_an_8x10_print_at_300_dpi_where_enabled(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DEMO_IMAGE_ENABLED = True

    response = Client().get("/demo/photo.jpg")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    image = pyvips.Image.new_from_buffer(response.content, "")
    assert (image.width, image.height, image.bands) == (2400, 3000, 3)
    assert Client().head("/demo/photo.jpg").status_code == 200
    refused = Client().post("/demo/photo.jpg")
    assert refused.status_code == 405
    assert refused.json()["outcome"] == "MethodNotAllowed"


@pytest.mark.django_db
def test_the_demo_photo_is_not_there_by_default(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DEMO_IMAGE_ENABLED = False

    response = Client().get("/demo/photo.jpg")

    assert response.status_code == 404
    assert response.json()["outcome"] == "EndpointDoesNotExist"
