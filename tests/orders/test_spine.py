"""The spine is printed: drawn with libvips from the order's spine object at the book's size and
resolution, refused at creation when it cannot hold its text, and sent to the lab."""

from pathlib import Path
from typing import Any

import pytest
import pyvips
from django.core.files.storage import default_storage
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.catalogue import catalogue_snapshot
from orders.artwork.spine import SpineSize, font_file, render_spine, spine_size
from orders.lab_orders import lab_order
from orders.models import Order, OrderItem, PipelineStep, Shipment
from orders.pipeline.steps.prepare import order_assets_prepare
from tests.support.images import jpeg_bytes, pdf_bytes
from tests.support.orders import order_body
from tests.support.pipeline import advance_to
from tests.support.servers import serve

BOOK = "BOOK-A4-L-HARD-M"  # 297 x 210 mm, 6.00 mm boards, 0.09 mm a page, covers at 300 dpi
SPINE = {
    "text": "Our Summer 2026",
    "backgroundColourHexCode": "#1E3A8A",
    "textColourHexCode": "FFD700",
    "textSizePx": 60,
    "textFontFamily": "Roboto",
}


@pytest.fixture(autouse=True)
def media_root(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ALLOW_PRIVATE_URLS = True  # the assets are served on loopback
    return Path(settings.MEDIA_ROOT)


def drawn(name: str) -> pyvips.Image:
    return pyvips.Image.new_from_file(default_storage.path(name))


def text_box(image: pyvips.Image, colour: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """The bounding box (left, top, width, height) of the pixels near ``colour``."""
    distance = ((image - list(colour)) ** 2).bandmean()
    mask = (distance < 40 * 40).ifthenelse(255, 0).cast("uchar")
    left, top, width, height = mask.find_trim(threshold=128, background=[0])
    return left, top, width, height


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
def test_the_spine_is_the_spine_width_by_the_book_height_at_the_products_resolution() -> None:
    product = catalogue_snapshot().products[BOOK]

    size = spine_size(product=product, attributes={}, pages=40)

    assert size is not None
    dots_per_mm = 300 / 25.4
    assert abs(size.width - (6.00 + 0.09 * 40) * dots_per_mm) <= 1
    assert abs(size.height - 210 * dots_per_mm) <= 1
    wider = spine_size(product=product, attributes={}, pages=200)
    assert wider is not None and abs(wider.width - (6.00 + 0.09 * 200) * dots_per_mm) <= 1


def test_the_spine_is_drawn_in_its_colours_with_its_text_centred_and_reading_down() -> None:
    size = SpineSize(width=113, height=2480, dpi=300)

    result = render_spine(spine=SPINE, size=size, storage_prefix="spines/1")

    image = drawn(result.print_file)
    assert (image.width, image.height) == (113, 2480)
    corner = image.getpoint(2, 2)  # the background (JPEG rounds a unit or two)
    assert all(abs(a - b) <= 2 for a, b in zip(corner, [30, 58, 138], strict=True))
    left, top, width, height = text_box(image, (255, 215, 0))
    assert height > 300 and width <= 60  # not blank, and running along the spine
    assert abs((left + width / 2) - 113 / 2) <= 3  # centred across
    assert abs((top + height / 2) - 2480 / 2) <= 3  # and along
    thumbnail = drawn(result.thumbnail)
    assert max(thumbnail.width, thumbnail.height) == 400


def test_the_text_reads_from_the_top_of_the_spine_down() -> None:
    """Turned a quarter clockwise: the start of the text is at the top."""
    spine = {"text": "WWWW........", "textSizePx": 50}

    image = drawn(
        render_spine(spine=spine, size=SpineSize(80, 1200, 300), storage_prefix="s/6").print_file
    )

    ink = 255 - image.bandmean()
    top, bottom = ink.crop(0, 0, 80, 600).avg(), ink.crop(0, 600, 80, 600).avg()
    assert top > 2 * bottom  # reversed, the dots would be at the top


def test_no_text_draws_the_background_alone_and_colours_default_to_black_on_white() -> None:
    plain = render_spine(spine={}, size=SpineSize(40, 300, 300), storage_prefix="spines/2")
    titled = render_spine(
        spine={"text": "Notes"}, size=SpineSize(40, 300, 300), storage_prefix="s/3"
    )

    assert drawn(plain.print_file).min() == 255
    assert drawn(titled.print_file).getpoint(1, 1) == [255, 255, 255]
    assert drawn(titled.print_file).min() < 40  # black text


def test_an_unknown_font_family_falls_back_to_roboto_and_styles_are_honoured() -> None:
    assert font_file("Comic Sans MS") == font_file(None) == font_file("roboto")
    assert font_file("Comic Sans MS")[0] == "Roboto"
    family, path = font_file("roboto bold")
    assert family == "Roboto Bold" and path.endswith("Roboto-Bold.ttf")
    size = SpineSize(80, 1200, 300)
    fallback = render_spine(spine={"text": "Ab", "textFontFamily": "Papyrus"}, size=size,
                            storage_prefix="s/4")  # fmt: skip
    roboto = render_spine(spine={"text": "Ab"}, size=size, storage_prefix="s/5")
    assert (drawn(fallback.print_file) - drawn(roboto.print_file)).abs().max() == 0


# --- creation ------------------------------------------------------------------------------


def book(spine: dict[str, Any] | None, *, spine_asset: bool = False, pages: int = 40) -> dict:  # type: ignore[type-arg]
    assets: list[dict[str, Any]] = [
        {"url": "https://images.example.com/book.pdf", "pageCount": pages}
    ]
    if spine_asset:
        assets.append({"printArea": "spine", "url": "https://images.example.com/spine.jpg"})
    item: dict[str, Any] = {"sku": BOOK, "copies": 1, "assets": assets}
    if spine is not None:
        item["spine"] = spine
    return item


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
@pytest.mark.parametrize(
    ("spine", "field", "code"),
    [
        ({**SPINE, "backgroundColourHexCode": "#12345G"}, "backgroundColourHexCode", "Invalid"),
        ({**SPINE, "textColourHexCode": "red"}, "textColourHexCode", "Invalid"),
        ({**SPINE, "text": "A very long title " * 8}, "text", "SpineTooSmall"),
        ({**SPINE, "textSizePx": 200}, "textSizePx", "SpineTooSmall"),
    ],
)
def test_a_spine_the_service_cannot_print_is_refused_at_creation_naming_the_field(
    sandbox_api: APIClient, spine: dict[str, Any], field: str, code: str
) -> None:
    response = sandbox_api.post("/v4.0/orders", order_body(items=[book(spine)]), format="json")

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    [failure] = body["data"]["failures"][f"items[0].spine.{field}"]
    assert failure["code"] == code
    assert not Order.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
def test_a_long_text_is_accepted_with_a_spine_asset_which_is_printed_instead(
    sandbox_api: APIClient,
) -> None:
    body = order_body(items=[book({**SPINE, "text": "A very long title " * 8}, spine_asset=True)])

    response = sandbox_api.post("/v4.0/orders", body, format="json")

    assert response.status_code == 200, response.content


# --- the print-ready step and the lab ------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
def test_the_print_ready_step_draws_the_spine_and_the_lab_gets_it_with_attributes_spine(
    sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    item = book(SPINE)
    item["assets"][0]["url"] = serve(httpserver, "/book.pdf", pdf_bytes(40), "application/pdf")
    order = _downloaded(sandbox_api, item)

    assert order_assets_prepare(order=order)

    row = OrderItem.objects.get(order=order)
    image = drawn(row.spine_print_file)
    size = spine_size(product=catalogue_snapshot().products[BOOK], attributes={}, pages=40)
    assert size is not None and (image.width, image.height) == (size.width, size.height)
    assert text_box(image, (255, 215, 0))[3] > 300  # the text is there
    assert row.spine_thumbnail and default_storage.exists(row.spine_thumbnail)
    sent = lab_order(Shipment.objects.get(order=order))
    [lab_item] = sent.items
    assert set(lab_item.files) == {"default", "spine"}
    assert "/media/" in lab_item.files["spine"] or lab_item.files["spine"].startswith("http")
    assert lab_item.spine == SPINE
    again = order_assets_prepare(order=order)  # drawn once: the step runs again harmlessly
    assert again and OrderItem.objects.get(id=row.id).spine_print_file == row.spine_print_file


@pytest.mark.django_db
@pytest.mark.usefixtures("catalogue")
def test_a_spine_asset_wins_over_the_spine_object(
    sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    item = book(SPINE, spine_asset=True)
    item["assets"][0]["url"] = serve(httpserver, "/book.pdf", pdf_bytes(40), "application/pdf")
    item["assets"][1]["url"] = serve(httpserver, "/spine.jpg", jpeg_bytes(60, 900), "image/jpeg")
    order = _downloaded(sandbox_api, item)

    assert order_assets_prepare(order=order)

    row = OrderItem.objects.get(order=order)
    assert row.spine_print_file == ""
    spine_asset = row.assets.get(print_area="spine")
    [lab_item] = lab_order(Shipment.objects.get(order=order)).items
    assert lab_item.files["spine"].split("?")[0].endswith(spine_asset.print_file.rsplit("/", 1)[-1])


def _downloaded(api: APIClient, item: dict[str, Any]) -> Order:
    """The order run in-process up to its print-ready step (downloaded and allocated)."""
    response = api.post("/v4.0/orders", order_body(items=[item]), format="json")
    assert response.status_code == 200, response.content
    return advance_to(response.json()["order"]["id"], PipelineStep.PREPARE)
