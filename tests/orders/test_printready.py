"""Print-ready files from synthetic images whose content shows what was kept, cut or added."""

from pathlib import Path

import pytest
import pyvips

from orders.artwork.printready import (
    PrintReadyError,
    PrintReadyResult,
    image_size,
    render_print_ready,
    should_rotate,
)

RED = (255, 0, 0)
GREEN = (0, 255, 0)
BLUE = (0, 0, 255)
WHITE = (255, 255, 255)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def bands_image(
    path: Path, width: int, height: int, colours=(RED, GREEN, BLUE), *, orientation: int = 0
) -> Path:
    """Equal vertical bands of flat colour, left to right, saved in the format of the suffix."""
    band = width // len(colours)
    parts = [
        pyvips.Image.black(band, height).new_from_image(list(colour)).cast("uchar")
        for colour in colours
    ]
    image = parts[0]
    for part in parts[1:]:
        image = image.join(part, "horizontal")
    image = image.copy(interpretation="srgb")
    if orientation:
        image.set_type(pyvips.GValue.gint_type, "orientation", orientation)
    if path.suffix == ".jpg":
        image.jpegsave(str(path), Q=100, subsample_mode="off")
    else:
        image.write_to_file(str(path))
    return path


def stored(media_root: Path, name: str) -> pyvips.Image:
    return pyvips.Image.new_from_file(str(media_root / name))


def pixel(image: pyvips.Image, x: int, y: int) -> tuple[int, ...]:
    return tuple(round(v) for v in image(x, y))


def near(actual: tuple[int, ...], expected: tuple[int, ...], tolerance: int = 12) -> bool:
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expected, strict=True))


def render(source: Path, width: int, height: int, sizing: str) -> PrintReadyResult:
    return render_print_ready(
        source=source,
        target_width=width,
        target_height=height,
        dpi=300,
        sizing=sizing,
        storage_prefix="print-ready/ord_1/ast_2",
    )


# --- sizing modes ---------------------------------------------------------------------------


def test_fill_crops_the_centre_to_the_print_area_aspect(tmp_path: Path, media_root: Path) -> None:
    # A 3:1 strip into a square: only the middle (green) third survives, scaled to cover.
    source = bands_image(tmp_path / "strip.png", 600, 200)

    result = render(source, 300, 300, "fillPrintArea")

    assert result == PrintReadyResult(
        print_file="print-ready/ord_1/ast_2/print.jpg",
        thumbnail="print-ready/ord_1/ast_2/thumbnail.jpg",
        width=300,
        height=300,
        rotated=False,
    )
    out = stored(media_root, result.print_file)
    assert (out.width, out.height, out.bands) == (300, 300, 3)
    for x, y in [(2, 2), (297, 2), (2, 297), (297, 297), (150, 150)]:
        assert near(pixel(out, x, y), GREEN), (x, y)


def test_fill_keeps_what_matches_the_area_and_cuts_only_the_overhang(
    tmp_path: Path, media_root: Path
) -> None:
    # 5 bands over 1000 px into 600x200 (3:1) from 1000x200 (5:1): the outer 200 px per side go.
    colours = [(0, 0, 0), RED, GREEN, BLUE, (255, 255, 0)]
    source = bands_image(tmp_path / "wide.png", 1000, 200, colours)

    out = stored(media_root, render(source, 600, 200, "fillPrintArea").print_file)

    assert (out.width, out.height) == (600, 200)
    assert near(pixel(out, 3, 100), RED)
    assert near(pixel(out, 300, 100), GREEN)
    assert near(pixel(out, 596, 100), BLUE)


def test_fill_scales_up_a_small_image_to_cover(tmp_path: Path, media_root: Path) -> None:
    source = bands_image(tmp_path / "small.png", 90, 60)

    out = stored(media_root, render(source, 900, 600, "fillPrintArea").print_file)

    assert (out.width, out.height) == (900, 600)
    assert near(pixel(out, 10, 300), RED)
    assert near(pixel(out, 450, 300), GREEN)
    assert near(pixel(out, 890, 300), BLUE)


def test_fit_shrinks_inside_and_fills_the_rest_with_white(tmp_path: Path, media_root: Path) -> None:
    # 600x200 into 300x300: scaled to 300x100, centred, white above and below.
    source = bands_image(tmp_path / "strip.png", 600, 200)

    out = stored(media_root, render(source, 300, 300, "fitPrintArea").print_file)

    assert (out.width, out.height) == (300, 300)
    for x, y in [(0, 0), (299, 0), (0, 299), (299, 299), (150, 95), (150, 205)]:
        assert pixel(out, x, y) == WHITE, (x, y)
    assert near(pixel(out, 10, 150), RED)
    assert near(pixel(out, 150, 150), GREEN)
    assert near(pixel(out, 290, 150), BLUE)


def test_fit_of_a_matching_aspect_leaves_no_white(tmp_path: Path, media_root: Path) -> None:
    source = bands_image(tmp_path / "photo.png", 600, 400)

    out = stored(media_root, render(source, 300, 200, "fitPrintArea").print_file)

    assert (out.width, out.height) == (300, 200)
    assert near(pixel(out, 0, 0), RED)
    assert near(pixel(out, 299, 199), BLUE)


def test_stretch_fills_the_area_exactly_distorting_the_image(
    tmp_path: Path, media_root: Path
) -> None:
    # 300x300 square into 600x200: each band becomes 200 wide, nothing cut, nothing white.
    source = bands_image(tmp_path / "square.png", 300, 300)

    out = stored(media_root, render(source, 600, 200, "stretchToPrintArea").print_file)

    assert (out.width, out.height) == (600, 200)
    assert near(pixel(out, 2, 2), RED)
    assert near(pixel(out, 190, 197), RED)
    assert near(pixel(out, 210, 100), GREEN)
    assert near(pixel(out, 390, 100), GREEN)
    assert near(pixel(out, 410, 2), BLUE)
    assert near(pixel(out, 597, 197), BLUE)


@pytest.mark.parametrize("sizing", ["fillPrintArea", "fitPrintArea", "stretchToPrintArea"])
@pytest.mark.parametrize(
    ("source_size", "target"),
    [((640, 480), (1800, 1200)), ((333, 517), (1201, 799)), ((1000, 999), (101, 103))],
)
def test_every_mode_produces_exactly_the_target_size(
    tmp_path: Path, media_root: Path, sizing: str, source_size, target
) -> None:
    source = bands_image(tmp_path / "photo.jpg", *source_size)

    result = render(source, target[0], target[1], sizing)

    out = stored(media_root, result.print_file)
    assert (out.width, out.height, out.bands) == (*target, 3)
    assert (result.width, result.height) == target


def test_sizing_is_case_insensitive_and_checked(tmp_path: Path) -> None:
    source = bands_image(tmp_path / "photo.png", 60, 40)

    assert render(source, 30, 20, "FITPRINTAREA").width == 30
    with pytest.raises(ValueError, match="Unknown sizing 'shrink'"):
        render(source, 30, 20, "shrink")


# --- rotation -------------------------------------------------------------------------------


def test_a_landscape_image_is_turned_for_a_portrait_area(tmp_path: Path, media_root: Path) -> None:
    source = bands_image(tmp_path / "landscape.png", 600, 200)

    result = render(source, 200, 600, "fillPrintArea")

    assert result.rotated is True
    out = stored(media_root, result.print_file)
    assert (out.width, out.height) == (200, 600)
    # Turned clockwise: the left (red) band is now at the top, the right (blue) at the bottom.
    assert near(pixel(out, 100, 5), RED)
    assert near(pixel(out, 100, 300), GREEN)
    assert near(pixel(out, 100, 594), BLUE)


def test_a_matching_orientation_is_not_turned(tmp_path: Path, media_root: Path) -> None:
    source = bands_image(tmp_path / "landscape.png", 600, 200)

    result = render(source, 600, 400, "fitPrintArea")

    assert result.rotated is False
    out = stored(media_root, result.print_file)
    assert near(pixel(out, 5, 200), RED)


@pytest.mark.parametrize(
    ("image", "target", "expected"),
    [
        ((6000, 4000), (7200, 4800), False),  # same aspect
        ((6000, 4000), (4800, 7200), True),  # landscape photo, portrait print
        ((4000, 6000), (7200, 4800), True),
        ((4000, 6000), (4800, 7200), False),
        ((1000, 1000), (600, 400), False),  # square image: a tie, kept as is
        ((600, 400), (1000, 1000), False),  # square area: a tie, kept as is
        ((1100, 1000), (1000, 1100), True),  # slightly landscape into slightly portrait
        ((100, 40), (3000, 2000), False),  # both landscape, however different the sizes
    ],
)
def test_should_rotate_compares_the_scale_factors_of_both_orientations(
    image: tuple[int, int], target: tuple[int, int], expected: bool
) -> None:
    assert (
        should_rotate(
            image_width=image[0],
            image_height=image[1],
            target_width=target[0],
            target_height=target[1],
        )
        is expected
    )


def test_exif_orientation_is_honoured(tmp_path: Path, media_root: Path) -> None:
    # Stored 600x200 with orientation 6 (display turned 90 degrees clockwise): a 200x600
    # portrait with red on top, which needs no turning for a portrait area.
    source = bands_image(tmp_path / "sideways.jpg", 600, 200, orientation=6)

    assert image_size(source) == (200, 600)
    result = render(source, 200, 600, "fillPrintArea")

    assert result.rotated is False
    out = stored(media_root, result.print_file)
    assert (out.width, out.height) == (200, 600)
    assert near(pixel(out, 100, 5), RED)
    assert near(pixel(out, 100, 594), BLUE)


# --- refusals -------------------------------------------------------------------------------


def test_a_decompression_bomb_png_is_refused_from_its_header(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.png"
    pyvips.Image.black(15000, 15000).pngsave(str(bomb), bitdepth=1, compression=9)
    assert bomb.stat().st_size < 100_000

    with pytest.raises(PrintReadyError) as refused:
        render(bomb, 7200, 4800, "fillPrintArea")

    assert str(refused.value) == (
        "The image is 15000x15000 pixels (225 megapixels); images over 200 megapixels are refused."
    )


def test_a_jpeg_header_declaring_huge_dimensions_is_refused(tmp_path: Path) -> None:
    data = bytearray(bands_image(tmp_path / "small.jpg", 30, 20).read_bytes())
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = (60000).to_bytes(2, "big") + (60000).to_bytes(2, "big")
    bomb = tmp_path / "bomb.jpg"
    bomb.write_bytes(bytes(data))

    with pytest.raises(PrintReadyError, match=r"^The image is 60000x60000 pixels \(3600 mega"):
        render(bomb, 7200, 4800, "fitPrintArea")


def test_a_truncated_jpeg_is_refused(tmp_path: Path, media_root: Path) -> None:
    noise = pyvips.Image.gaussnoise(600, 400, sigma=60).bandjoin([0, 0]).cast("uchar")
    whole = tmp_path / "whole.jpg"
    noise.copy(interpretation="srgb").jpegsave(str(whole), Q=90)
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size * 6 // 10])

    with pytest.raises(PrintReadyError) as refused:
        render(truncated, 300, 200, "fillPrintArea")

    assert str(refused.value) == (
        "The image could not be processed: VipsJpeg: premature end of JPEG image."
    )
    assert not (media_root / "print-ready/ord_1/ast_2/print.jpg").exists()


def test_a_truncated_png_is_refused(tmp_path: Path) -> None:
    noise = pyvips.Image.gaussnoise(600, 400, sigma=60).cast("uchar")
    whole = tmp_path / "whole.png"
    noise.pngsave(str(whole))
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])

    with pytest.raises(PrintReadyError, match=r"^The image could not be processed: "):
        render(truncated, 300, 200, "fitPrintArea")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"%PDF-1.7\n...", "The file is not a JPEG, PNG or TIFF image."),
        (b"<html>Not found</html>", "The file is not a JPEG, PNG or TIFF image."),
        (b"\xff\xd8\xff" + b"\x00" * 200, "The image could not be read: "),
    ],
)
def test_files_that_are_not_readable_images_are_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "asset"
    path.write_bytes(content)

    with pytest.raises(PrintReadyError) as refused:
        render(path, 300, 200, "fillPrintArea")

    assert str(refused.value).startswith(message)


# --- colour, thumbnail, storage -------------------------------------------------------------


def test_transparency_prints_white_and_grey_prints_as_rgb(tmp_path: Path, media_root: Path) -> None:
    grey = pyvips.Image.black(100, 100) + 60
    alpha = pyvips.Image.black(50, 100).join(pyvips.Image.black(50, 100) + 255, "horizontal")
    source = tmp_path / "grey-alpha.png"
    grey.bandjoin(alpha).cast("uchar").copy(interpretation="b-w").pngsave(str(source))

    out = stored(media_root, render(source, 100, 100, "fillPrintArea").print_file)

    assert out.bands == 3
    assert pixel(out, 10, 50) == WHITE  # transparent half
    assert near(pixel(out, 90, 50), (60, 60, 60))


def test_sixteen_bit_tiff_becomes_eight_bit(tmp_path: Path, media_root: Path) -> None:
    image = pyvips.Image.black(120, 80).cast("ushort").new_from_image([65535, 0, 0])
    source = tmp_path / "deep.tif"
    image.copy(interpretation="rgb16").tiffsave(str(source))

    out = stored(media_root, render(source, 60, 40, "stretchToPrintArea").print_file)

    assert out.format == "uchar"
    assert near(pixel(out, 30, 20), RED)


def test_thumbnail_is_a_small_jpeg_of_the_print_file(tmp_path: Path, media_root: Path) -> None:
    source = bands_image(tmp_path / "photo.jpg", 1200, 800)

    result = render(source, 1800, 1200, "fitPrintArea")

    thumb = stored(media_root, result.thumbnail)
    assert (thumb.width, thumb.height) == (400, 267)
    assert thumb.get("vips-loader") == "jpegload"
    assert near(pixel(thumb, 5, 133), RED)
    assert near(pixel(thumb, 394, 133), BLUE)


@pytest.mark.parametrize(
    ("size", "area", "from_source"),
    [
        ((600, 200), (1800, 1800), True),  # the print file is the bigger JPEG
        ((6000, 2000), (300, 300), False),  # the source is
        ((600, 400), (1200, 1800), True),  # turned to fit the portrait area
    ],
)
def test_a_thumbnail_shows_the_print_files_cut_whichever_jpeg_it_is_made_from(
    tmp_path: Path,
    media_root: Path,
    size: tuple[int, int],
    area: tuple[int, int],
    from_source: bool,
) -> None:
    """Made from the JPEG with fewer bytes (decoding costs by the byte), the source or the print
    file; either way it is the print file's picture, cut and turned as the print is."""
    source = bands_image(tmp_path / "bands.jpg", *size)

    result = render(source, *area, "fillPrintArea")

    print_file = stored(media_root, result.print_file)
    thumb = stored(media_root, result.thumbnail)
    source_smaller = source.stat().st_size < (media_root / result.print_file).stat().st_size
    assert source_smaller is from_source  # the case covers the way it is named for
    scale = 400 / max(area)
    assert (thumb.width, thumb.height) == (round(area[0] * scale), round(area[1] * scale))
    for fx, fy in [(0.05, 0.05), (0.5, 0.5), (0.95, 0.95), (0.05, 0.95), (0.95, 0.05)]:
        expected = pixel(print_file, int(fx * print_file.width), int(fy * print_file.height))
        assert near(pixel(thumb, int(fx * thumb.width), int(fy * thumb.height)), expected)


def test_rendering_again_replaces_the_stored_files(tmp_path: Path, media_root: Path) -> None:
    first = render(bands_image(tmp_path / "a.png", 60, 40), 30, 20, "fillPrintArea")
    second = render(bands_image(tmp_path / "b.png", 60, 40, (BLUE,)), 30, 20, "fillPrintArea")

    assert second.print_file == first.print_file
    assert second.thumbnail == first.thumbnail
    assert sorted(p.name for p in (media_root / "print-ready/ord_1/ast_2").iterdir()) == [
        "print.jpg",
        "thumbnail.jpg",
    ]
    assert near(pixel(stored(media_root, second.print_file), 15, 10), BLUE)


def test_a_cmyk_jpeg_becomes_srgb(tmp_path: Path, media_root: Path) -> None:
    red = pyvips.Image.black(300, 200).new_from_image([255, 0, 0]).cast("uchar")
    source = tmp_path / "cmyk.jpg"
    red.copy(interpretation="srgb").colourspace("cmyk").jpegsave(str(source))

    out = stored(media_root, render(source, 150, 100, "fillPrintArea").print_file)

    assert (out.bands, out.interpretation) == (3, "srgb")
    assert near(pixel(out, 75, 50), RED, tolerance=45)
