"""Print-ready files: an asset image resized to its print area's pixels, and a thumbnail.

Sizing follows the specification's table:

- ``fillPrintArea``: scaled to cover the print area and centred, the overhang cropped;
- ``fitPrintArea``: scaled to fit wholly inside, centred, the rest of the area white;
- ``stretchToPrintArea``: scaled to the area's exact size, distorting if the aspects differ.

The image is turned 90 degrees first when that needs less resizing: of the two orientations,
the one whose horizontal and vertical scale factors are closer together (least cropping for
fill, least white space for fit, least distortion for stretch). EXIF orientation is applied
before anything is compared, so a portrait photo stored sideways counts as portrait.

Memory stays bounded whatever the input: the header is read first and images over
``MAX_SOURCE_PIXELS`` are refused before any pixel is decoded; then libvips streams the file
top to bottom (``thumbnail`` without its crop option, which would decode the whole image, plus a
centred ``extract_area``), shrinking on load where the format allows. Turning an image needs
random access, so a turned image goes through a tiled temporary TIFF instead of memory.
Truncated or corrupt files fail (``fail_on="error"``) instead of printing grey.

Every print file is tagged with the density its pixels are for (``dpi``: EXIF resolution in
inches, which libvips writes instead of a JFIF density), so that a lab's RIP prints it at its
print area's size; of the source's metadata only the colour profile is kept.
"""

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyvips

from common.files import file_store
from orders.artwork.files import IMAGE_FORMATS, AssetFormat, sniff_format

FILL = "fillPrintArea"
FIT = "fitPrintArea"
STRETCH = "stretchToPrintArea"
SIZING_MODES = (FILL, FIT, STRETCH)
_SIZING_BY_LOWER = {mode.lower(): mode for mode in SIZING_MODES}

# A 200-megapixel RGB image is 600 MB decoded; anything larger is refused unread.
MAX_SOURCE_PIXELS = 200_000_000
THUMBNAIL_LONGEST_SIDE = 400
PRINT_JPEG_QUALITY = 95
THUMBNAIL_JPEG_QUALITY = 85
PRINT_FILE_NAME = "print.jpg"
THUMBNAIL_NAME = "thumbnail.jpg"
_WHITE = [255, 255, 255]
_TIFF_TILE = 256
MM_PER_INCH = 25.4
# Metadata of the source a print file does not carry (camera data, places, captions): the
# fresh EXIF block written holds the resolution only.
_DROPPED_METADATA = ("xmp-data", "iptc-data", "orientation")

# Every asset is a different file, so libvips' operation cache only holds on to memory.
pyvips.cache_set_max(0)


def render_threads_set() -> None:
    """Let each rendering in this process use ``RENDER_THREADS`` libvips threads (0: leave
    libvips' default, one per CPU); set once in a rendering process, before it renders."""
    from django.conf import settings

    if settings.RENDER_THREADS > 0:
        pyvips.vips_lib.vips_concurrency_set(settings.RENDER_THREADS)


class PrintReadyError(Exception):
    """The image cannot be made into a print file; the message says why, for the merchant."""


@dataclass(frozen=True)
class PrintReadyResult:
    print_file: str  # storage name
    thumbnail: str  # storage name
    width: int
    height: int
    rotated: bool


def render_print_ready(
    *,
    source: Path,
    target_width: int,
    target_height: int,
    dpi: int,
    sizing: str,
    storage_prefix: str,
) -> PrintReadyResult:
    """Make the print file (tagged ``dpi`` dots per inch: the density of the target's pixels)
    and its thumbnail and keep both in the default storage.

    The names are ``{storage_prefix}/print.jpg`` and ``{storage_prefix}/thumbnail.jpg``;
    running again replaces them, so a repeated pipeline step leaves one pair.
    """
    mode = _SIZING_BY_LOWER.get(sizing.lower())
    if mode is None:
        raise ValueError(f"Unknown sizing {sizing!r}; expected one of {', '.join(SIZING_MODES)}.")
    if target_width < 1 or target_height < 1:
        raise ValueError(f"Invalid print area size {target_width}x{target_height}.")
    width, height = image_size(source)
    rotated = should_rotate(
        image_width=width,
        image_height=height,
        target_width=target_width,
        target_height=target_height,
    )
    with tempfile.TemporaryDirectory(prefix="printready-") as scratch:
        work = Path(scratch)
        print_path = work / PRINT_FILE_NAME
        thumbnail_path = work / THUMBNAIL_NAME
        try:
            _write_print_file(
                source=source,
                image_size=(width, height),
                target=(target_width, target_height),
                mode=mode,
                rotated=rotated,
                work=work,
                destination=print_path,
                dpi=dpi,
            )
            _write_thumbnail(
                source=source,
                image_size=(width, height),
                target=(target_width, target_height),
                mode=mode,
                rotated=rotated,
                work=work,
                print_path=print_path,
                destination=thumbnail_path,
            )
        except pyvips.Error as exc:
            raise PrintReadyError(
                f"The image could not be processed: {_vips_reason(exc)}."
            ) from exc
        prefix = storage_prefix.strip("/")
        return PrintReadyResult(
            print_file=file_store(print_path, f"{prefix}/{PRINT_FILE_NAME}"),
            thumbnail=file_store(thumbnail_path, f"{prefix}/{THUMBNAIL_NAME}"),
            width=target_width,
            height=target_height,
            rotated=rotated,
        )


def image_size(source: Path) -> tuple[int, int]:
    """Width and height as displayed (EXIF orientation applied), read from the header only.

    Refuses files that are not JPEG, PNG or TIFF, and images over ``MAX_SOURCE_PIXELS``.
    """
    with source.open("rb") as handle:
        found = sniff_format(handle.read(1024))
    if found not in IMAGE_FORMATS:
        raise PrintReadyError("The file is not a JPEG, PNG or TIFF image.")
    try:
        header = pyvips.Image.new_from_file(str(source), access="sequential")
    except pyvips.Error as exc:
        raise PrintReadyError(f"The image could not be read: {_vips_reason(exc)}.") from exc
    width, height = header.width, header.height
    if width * height > MAX_SOURCE_PIXELS:
        raise PrintReadyError(
            f"The image is {width}x{height} pixels ({width * height / 1e6:.0f} megapixels); "
            f"images over {MAX_SOURCE_PIXELS // 1_000_000} megapixels are refused."
        )
    orientation = header.get("orientation") if header.get_typeof("orientation") else 1
    if orientation in (5, 6, 7, 8):  # stored turned by 90 or 270 degrees
        return height, width
    return width, height


def should_rotate(
    *, image_width: int, image_height: int, target_width: int, target_height: int
) -> bool:
    """True when the image turned 90 degrees needs less resizing for this print area.

    Compares, for each orientation, how far apart the horizontal and vertical scale factors are
    (their ratio); equal factors mean a uniform resize. A tie (square image or area) keeps the
    image as it is.
    """

    def spread(width: int, height: int) -> float:
        horizontal, vertical = target_width / width, target_height / height
        return max(horizontal, vertical) / min(horizontal, vertical)

    return spread(image_height, image_width) < spread(image_width, image_height)


def _write_print_file(
    *,
    source: Path,
    image_size: tuple[int, int],
    target: tuple[int, int],
    mode: str,
    rotated: bool,
    work: Path,
    destination: Path,
    dpi: int | None,
) -> None:
    """The print file, tagged ``dpi``; None: a thumbnail (no tag, no metadata)."""
    width, height = image_size
    # Produce the image in the orientation it is used in, turn it at the end.
    out_w, out_h = (target[1], target[0]) if rotated else target
    path = str(source)
    if mode == STRETCH:
        image = pyvips.Image.thumbnail(path, out_w, height=out_h, size="force", fail_on="error")
        image = _to_srgb(image)
    elif mode == FIT:
        image = pyvips.Image.thumbnail(path, out_w, height=out_h, fail_on="error")
        image = _to_srgb(image).gravity(
            "centre", out_w, out_h, extend="background", background=_WHITE
        )
    else:
        # Fit the scaled image's short side exactly, then cut the overhang from both ends.
        if width * out_h >= out_w * height:
            box_w, box_h = math.ceil(width * out_h / height) + 1, out_h
        else:
            box_w, box_h = out_w, math.ceil(height * out_w / width) + 1
        image = _to_srgb(pyvips.Image.thumbnail(path, box_w, height=box_h, fail_on="error"))
        if image.width < out_w or image.height < out_h:  # a rounding pixel short
            image = image.gravity(
                "centre", max(image.width, out_w), max(image.height, out_h), extend="copy"
            )
        image = image.extract_area(
            (image.width - out_w) // 2, (image.height - out_h) // 2, out_w, out_h
        )
    if rotated:
        # rot90 reads columns; a tiled file gives it random access without holding the image.
        tiled = work / f"unrotated-{destination.stem}.tif"
        image.tiffsave(
            str(tiled),
            tile=True,
            tile_width=_TIFF_TILE,
            tile_height=_TIFF_TILE,
            compression="none",
            keep="icc",
        )
        image = pyvips.Image.new_from_file(str(tiled), access="random").rot90()
    if dpi is None:
        image.jpegsave(str(destination), Q=THUMBNAIL_JPEG_QUALITY, keep="none")
    else:
        print_file_save(image, destination, dpi=dpi)


def print_file_save(image: pyvips.Image, destination: Path, *, dpi: int) -> None:
    """Write ``image`` as a print JPEG tagged ``dpi`` dots per inch (EXIF ``XResolution``,
    ``YResolution``, ``ResolutionUnit`` inches), keeping of its metadata the colour profile."""
    tagged = image.copy(xres=dpi / MM_PER_INCH, yres=dpi / MM_PER_INCH)
    for name in tagged.get_fields():
        if name.startswith("exif-") or name in _DROPPED_METADATA:
            tagged.remove(name)
    tagged.set_type(pyvips.GValue.gstr_type, "resolution-unit", "in")
    tagged.jpegsave(str(destination), Q=PRINT_JPEG_QUALITY, keep="exif|icc")


def _write_thumbnail(
    *,
    source: Path,
    image_size: tuple[int, int],
    target: tuple[int, int],
    mode: str,
    rotated: bool,
    work: Path,
    print_path: Path,
    destination: Path,
) -> None:
    """The print file's picture at ``THUMBNAIL_LONGEST_SIDE`` pixels on its longer side.

    Made from whichever JPEG has fewer bytes, the print file or a JPEG source: both shrink on
    load (decoded at an eighth of their size), and decoding costs by the byte. From the source,
    the print's own cut is made again at the thumbnail's size (same sizing, same turn).
    """
    with source.open("rb") as handle:
        source_is_jpeg = sniff_format(handle.read(16)) is AssetFormat.JPEG
    if not source_is_jpeg or source.stat().st_size >= print_path.stat().st_size:
        pyvips.Image.thumbnail(
            str(print_path), THUMBNAIL_LONGEST_SIDE, height=THUMBNAIL_LONGEST_SIDE
        ).jpegsave(str(destination), Q=THUMBNAIL_JPEG_QUALITY, keep="none")
        return
    scale = THUMBNAIL_LONGEST_SIDE / max(target)
    small = (max(1, round(target[0] * scale)), max(1, round(target[1] * scale)))
    _write_print_file(
        source=source,
        image_size=image_size,
        target=small,
        mode=mode,
        rotated=rotated,
        work=work,
        destination=destination,
        dpi=None,
    )


def _to_srgb(image: pyvips.Image) -> pyvips.Image:
    """8-bit sRGB without alpha: labs print JPEG, and transparency prints as white paper."""
    if image.interpretation != "srgb" or image.format != "uchar":
        image = image.colourspace("srgb")
    if image.hasalpha():
        image = image.flatten(background=_WHITE)
    if image.bands > 3:
        image = image.extract_band(0, n=3)
    return image.cast("uchar")


def _vips_reason(exc: pyvips.Error) -> str:
    """libvips' own last line ("VipsJpeg: premature end of JPEG image") names the problem."""
    lines = [line.strip() for line in (exc.detail or exc.message or "").splitlines()]
    meaningful = [line for line in lines if line and not line.startswith("unable to call")]
    return (meaningful[-1] if meaningful else "unknown libvips error").rstrip(".")
