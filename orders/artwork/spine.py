"""A photobook's spine print file, rendered with libvips from the order's ``spine`` object.

The file is the spine's width for the book's page count (``products.selectors.spine_width_mm``)
by the book's height, at the product's resolution: the pixels per millimetre of its cover
(``default`` print area: its recommended vertical pixels over the product's height), which the
file's density tag states (in whole dots per inch). It is
filled with ``backgroundColourHexCode`` (white when not given), and ``text`` is written in
``textColourHexCode`` (black when not given), ``textSizePx`` pixels high (when not given,
``DEFAULT_TEXT_SHARE`` of the spine's width), centred and turned a quarter clockwise, so it
reads from the top of the spine to the bottom as a book on a shelf does.

Fonts: the project installs Roboto (the ``font-roboto`` package, Apache License 2.0) and
draws every spine with it, so a spine looks the same on every machine. ``textFontFamily``
names a Roboto style (``Roboto``, ``Roboto Bold``, ``Roboto Light Italic``, ...; any letter
case); any other family falls back to ``Roboto`` (regular).

A text longer than the spine can hold (``SPINE_MARGIN_SHARE`` of the height kept clear at each
end), or a text size wider than the spine, is refused when the order is created
(``spine_failures``), naming the field.
"""

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import font_roboto  # type: ignore[import-untyped]
import pyvips

from common.files import file_store
from orders.artwork.printready import (
    MM_PER_INCH,
    PRINT_FILE_NAME,
    THUMBNAIL_JPEG_QUALITY,
    THUMBNAIL_LONGEST_SIDE,
    THUMBNAIL_NAME,
    PrintReadyError,
    PrintReadyResult,
    print_file_save,
)
from products.models import Product, Units
from products.selectors import spine_width_mm
from products.validation import DEFAULT_PRINT_AREA, resolve_attributes

SPINE_AREA = "spine"
FONT_FAMILY = "Roboto"
DEFAULT_BACKGROUND = "FFFFFF"
DEFAULT_TEXT_COLOUR = "000000"
DEFAULT_TEXT_SHARE = Decimal("0.6")
SPINE_MARGIN_SHARE = Decimal("0.05")
_MM_PER_UNIT: dict[str, Decimal] = {
    Units.MILLIMETRES: Decimal(1),
    Units.CENTIMETRES: Decimal(10),
    Units.INCHES: Decimal("25.4"),
}
# The font size libvips is given is in points; at 72 dots per inch a point is a pixel.
_POINTS_PER_INCH = 72


@dataclass(frozen=True)
class SpineSize:
    width: int  # pixels across the spine
    height: int  # pixels along it: the book's height
    dpi: int  # the pixels' density: the cover's, in whole dots per inch


def area_pixels(
    product: Product, attributes: Mapping[str, str], area: str
) -> tuple[int, int] | None:
    """The recommended pixels of ``area`` on the product's variant with these attributes (as
    the order names them; defaults filled in here), or None."""
    resolved = resolve_attributes(product=product, attributes=attributes)
    for variant in product.variants.all():
        if variant.attributes == resolved:
            size = (variant.print_area_sizes or {}).get(area)
            if size:
                return int(size["horizontalResolution"]), int(size["verticalResolution"])
    return None


def spine_size(*, product: Product, attributes: Mapping[str, str], pages: int) -> SpineSize | None:
    """The spine file's pixels for a book of ``pages`` pages, or None when the product has no
    spine or no cover size to take its resolution from."""
    cover = area_pixels(product, attributes, DEFAULT_PRINT_AREA)
    if cover is None or not product.has_spine:
        return None
    height_mm = product.height * _MM_PER_UNIT[product.units]
    pixels_per_mm = Decimal(cover[1]) / height_mm
    try:
        width = spine_width_mm(product=product, pages=pages) * pixels_per_mm
    except ValueError:  # a page count outside the product's range: refused elsewhere
        return None
    dpi = int((pixels_per_mm * Decimal(str(MM_PER_INCH))).to_integral_value())
    return SpineSize(width=max(1, int(width.to_integral_value())), height=cover[1], dpi=dpi)


def font_file(family: str | None) -> tuple[str, str]:
    """The installed Roboto style ``family`` names, else Roboto regular: (pango family and
    style, its file)."""
    key = "".join((family or "").split()).replace("-", "").lower()
    for name, path in sorted(font_roboto.font_files.items()):
        if name.lower() == key:
            style = name[len(FONT_FAMILY) :]
            words = "".join(f" {c}" if c.isupper() else c for c in style).strip()
            return f"{FONT_FAMILY} {words}".strip(), str(path)
    return FONT_FAMILY, str(font_roboto.font_files[FONT_FAMILY])


def text_size_px(spine: Mapping[str, Any], size: SpineSize) -> int:
    given = spine.get("textSizePx")
    if given:
        return int(given)
    return max(1, int((Decimal(size.width) * DEFAULT_TEXT_SHARE).to_integral_value()))


def _text_mask(spine: Mapping[str, Any], size: SpineSize) -> pyvips.Image | None:
    """The text as a one-band mask, as it reads (not yet turned); None without text."""
    text = str(spine.get("text") or "").strip()
    if not text:
        return None
    family, path = font_file(spine.get("textFontFamily"))
    return pyvips.Image.text(
        _pango_escaped(text),
        font=f"{family} {text_size_px(spine, size)}",
        fontfile=path,
        dpi=_POINTS_PER_INCH,
    )


def _pango_escaped(text: str) -> str:
    """libvips reads the text as Pango markup: ``&``, ``<`` and ``>`` are printed as given."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def spine_failures(spine: Mapping[str, Any], size: SpineSize) -> dict[str, str]:
    """What the spine cannot hold, by field (``text``, ``textSizePx``): empty when it fits."""
    failures: dict[str, str] = {}
    text_px = text_size_px(spine, size)
    if spine.get("textSizePx") and text_px > size.width:
        failures["textSizePx"] = (
            f"The spine is {size.width} px wide; text {text_px} px high does not fit across it."
        )
    mask = _text_mask(spine, size)
    room = int(Decimal(size.height) * (1 - 2 * SPINE_MARGIN_SHARE))
    if mask is not None and mask.width > room:
        failures["text"] = (
            f"The text is {mask.width} px long at {text_px} px; the spine holds {room} px "
            f"(its height, {size.height} px, less a margin at each end). Shorten the text or "
            "make it smaller."
        )
    return failures


def _rgb(code: str | None, default: str) -> list[int]:
    value = (code or default).lstrip("#")
    return [int(value[i : i + 2], 16) for i in (0, 2, 4)]


def render_spine(
    *, spine: Mapping[str, Any], size: SpineSize, storage_prefix: str
) -> PrintReadyResult:
    """Draw the spine (tagged ``size.dpi``) and keep it and its thumbnail in the default storage
    (``{storage_prefix}/print.jpg`` and ``thumbnail.jpg``; drawn again, they are replaced)."""
    background = _rgb(spine.get("backgroundColourHexCode"), DEFAULT_BACKGROUND)
    colour = _rgb(spine.get("textColourHexCode"), DEFAULT_TEXT_COLOUR)
    try:
        mask = _text_mask(spine, size)
        if mask is None:
            mask = pyvips.Image.black(size.width, size.height)
        else:
            mask = mask.rot90().gravity("centre", size.width, size.height, extend="black")
        image = mask.ifthenelse(colour, background, blend=True).cast("uchar")
        image = image.copy(interpretation="srgb")
        with tempfile.TemporaryDirectory(prefix="spine-") as scratch:
            print_path = Path(scratch) / PRINT_FILE_NAME
            thumbnail_path = Path(scratch) / THUMBNAIL_NAME
            print_file_save(image, print_path, dpi=size.dpi)
            pyvips.Image.thumbnail(
                str(print_path), THUMBNAIL_LONGEST_SIDE, height=THUMBNAIL_LONGEST_SIDE
            ).jpegsave(str(thumbnail_path), Q=THUMBNAIL_JPEG_QUALITY, keep="none")
            prefix = storage_prefix.strip("/")
            return PrintReadyResult(
                print_file=file_store(print_path, f"{prefix}/{PRINT_FILE_NAME}"),
                thumbnail=file_store(thumbnail_path, f"{prefix}/{THUMBNAIL_NAME}"),
                width=size.width,
                height=size.height,
                rotated=False,
            )
    except pyvips.Error as exc:
        raise PrintReadyError(f"The spine could not be drawn: {exc.message}") from exc
