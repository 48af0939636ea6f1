"""Every print file says the density its pixels are for: read back from the files the
print-ready step wrote for each kind of product of the demo catalogue, its density tag is 300
dots per inch and its pixels at that density are the print area's physical size. A lab's RIP
sizes a print by that tag (a file without one is taken as 72 dpi, four times too big)."""

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from PIL import Image
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.artwork.printready import render_print_ready
from orders.models import Asset, Order, OrderItem, PipelineStep
from orders.pipeline.steps.prepare import order_assets_prepare
from tests.support.images import jpeg_bytes, pdf_bytes
from tests.support.orders import order_body
from tests.support.pipeline import advance_to
from tests.support.servers import serve

MM = 1 / 25.4  # inches
# EXIF tags read back
RESOLUTION_UNIT, INCHES, MAKE, ARTIST = 296, 2, 271, 315
# sku, attributes, print area -> its physical size in inches (width, height)
KINDS: list[tuple[str, dict[str, str], dict[str, tuple[float, float]]]] = [
    ("GLOBAL-FAP-8X10", {}, {"default": (8, 10)}),
    ("GLOBAL-PHO-4X6", {}, {"default": (4, 6)}),
    # The picture continues round the canvas's 1.25 in stretcher edges.
    ("GLOBAL-CAN-10X10", {"wrap": "ImageWrap"}, {"default": (12.5, 12.5)}),
    ("GLOBAL-CFPM-12X16", {"color": "black"}, {"default": (12, 16)}),
    ("JIGSAW-PUZZLE-500", {}, {"default": (20, 14), "lid": (10, 7)}),
    ("GLOBAL-POSTER-A3", {}, {"default": (297 * MM, 420 * MM)}),
    ("GLOBAL-GRE-5X7", {}, {"default": (5, 7), "inside": (5, 7)}),
    ("GLOBAL-GRE-A6", {}, {"default": (105 * MM, 148 * MM)}),
]
BOOK = "BOOK-A5-L-SOFT-G"  # 210 x 148 mm, 1.00 mm covers, 0.11 mm a page; pages are a PDF


@pytest.fixture(autouse=True)
def media_root(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ALLOW_PRIVATE_URLS = True  # the assets are served on loopback
    return Path(settings.MEDIA_ROOT)


def density_and_size(path: Path) -> tuple[tuple[float, float], tuple[int, int]]:
    """The file's density tag (dots per inch across and down) and its pixels."""
    with Image.open(path) as image:
        assert image.format == "JPEG"
        assert image.getexif().get(RESOLUTION_UNIT) == INCHES
        return image.info["dpi"], image.size


def assert_printed_at(path: Path, inches: tuple[float, float], dpi: float = 300) -> None:
    """The file is tagged ``dpi`` and its pixels at that density are ``inches`` (to a pixel)."""
    density, pixels = density_and_size(path)
    assert density == (dpi, dpi)
    for count, length in zip(pixels, inches, strict=True):
        assert abs(count / dpi - length) <= 1 / dpi, (pixels, inches)


def prepared(api: APIClient, item: dict[str, Any]) -> Order:
    """The order's print-ready step run (downloaded and allocated first, in-process)."""
    response = api.post("/v4.0/orders", order_body(items=[item]), format="json")
    assert response.status_code == 200, response.content
    order = advance_to(response.json()["order"]["id"], PipelineStep.PREPARE)
    assert order_assets_prepare(order=order)
    return order


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
@pytest.mark.parametrize(("sku", "attributes", "areas"), KINDS, ids=[k[0] for k in KINDS])
def test_each_print_file_is_tagged_with_the_density_of_its_pixels(
    sandbox_api: APIClient,
    httpserver: HTTPServer,
    sku: str,
    attributes: dict[str, str],
    areas: dict[str, tuple[float, float]],
) -> None:
    assets = [
        {"printArea": area, "url": serve(httpserver, f"/{area}.jpg", jpeg_bytes(), "image/jpeg")}
        for area in areas
    ]
    item = {"sku": sku, "copies": 1, "attributes": attributes, "assets": assets}

    order = prepared(sandbox_api, item)

    files = dict(Asset.objects.filter(item__order=order).values_list("print_area", "print_file"))
    assert set(files) == set(areas)
    for area, inches in areas.items():
        assert_printed_at(Path(default_storage.path(files[area])), inches)


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
def test_the_drawn_spine_is_tagged_300_dpi_and_is_the_spine_at_that_density(
    sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    pages = serve(httpserver, "/book.pdf", pdf_bytes(40), "application/pdf")
    item = {
        "sku": BOOK,
        "copies": 1,
        "assets": [{"url": pages, "pageCount": 40}],
        "spine": {"text": "Summer", "backgroundColourHexCode": "#1E3A8A"},
    }

    order = prepared(sandbox_api, item)

    spine = OrderItem.objects.get(order=order).spine_print_file
    assert_printed_at(Path(default_storage.path(spine)), ((1.00 + 0.11 * 40) * MM, 148 * MM))
    # The pages are the merchant's PDF, sent as given.
    assert Asset.objects.get(item__order=order).print_file.endswith(".pdf")


@pytest.mark.parametrize(("width", "height"), [(600, 400), (400, 600)], ids=["as is", "turned"])
def test_the_print_file_has_the_given_density_and_none_of_the_sources_metadata(
    tmp_path: Path, media_root: Path, width: int, height: int
) -> None:
    # A camera's photo: tagged 72 dpi, with its maker and the photographer's name.
    source = tmp_path / "photo.jpg"
    exif = Image.Exif()
    exif[MAKE], exif[ARTIST] = "Camera Maker", "A. Photographer"
    out = io.BytesIO()
    Image.new("RGB", (900, 600), (200, 80, 40)).save(out, "JPEG", dpi=(72, 72), exif=exif)
    source.write_bytes(out.getvalue())

    result = render_print_ready(
        source=source,
        target_width=width,
        target_height=height,
        dpi=150,
        sizing="fillPrintArea",
        storage_prefix="print-ready/ord_1/ast_2",
    )

    path = media_root / result.print_file
    assert density_and_size(path) == ((150, 150), (width, height))
    with Image.open(path) as image:
        assert MAKE not in image.getexif() and ARTIST not in image.getexif()
