"""Asset file checks: format from bytes, md5, PDF page counts."""

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest
import pyvips
from pypdf import PdfWriter

from orders.artwork.files import (
    AssetFileError,
    AssetFileInfo,
    AssetFormat,
    Md5Mismatch,
    check_md5,
    file_md5,
    inspect_asset_file,
    pdf_page_count,
    sniff_format,
)


def write_image(path: Path, suffix: str) -> Path:
    """A real 16x8 image in the format the suffix names, saved under a misleading name."""
    image = pyvips.Image.black(16, 8, bands=3) + 128
    image.cast("uchar").write_to_file(str(path.with_suffix(suffix)))
    written = path.with_suffix(suffix)
    renamed = path.with_name(path.name + ".bin")
    written.rename(renamed)
    return renamed


def pdf_bytes(pages: int, *, password: str | None = None, owner_only: bool = False) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    if password is not None:
        if owner_only:
            writer.encrypt(user_password="", owner_password=password)
        else:
            writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [(".jpg", AssetFormat.JPEG), (".png", AssetFormat.PNG), (".tif", AssetFormat.TIFF)],
)
def test_images_are_recognised_from_their_bytes_not_their_name(
    tmp_path: Path, suffix: str, expected: AssetFormat
) -> None:
    path = write_image(tmp_path / "photo", suffix)

    info = inspect_asset_file(path=path, priced_by_page=False)

    assert info == AssetFileInfo(format=expected, media_type=expected.media_type, page_count=None)


def test_media_types() -> None:
    assert [f.media_type for f in AssetFormat] == [
        "image/jpeg",
        "image/png",
        "image/tiff",
        "application/pdf",
    ]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", AssetFormat.JPEG),
        (b"\x89PNG\r\n\x1a\n\x00\x00", AssetFormat.PNG),
        (b"II*\x00\x08\x00", AssetFormat.TIFF),
        (b"MM\x00*\x00\x00", AssetFormat.TIFF),
        (b"II+\x00\x08\x00", AssetFormat.TIFF),
        (b"%PDF-1.7\n", AssetFormat.PDF),
        (b"\r\n\xef\xbb\xbf%PDF-1.4\n", AssetFormat.PDF),
        (b"GIF89a", None),
        (b"<html><body>Not found</body></html>", None),
        (b"RIFF\x00\x00\x00\x00WEBP", None),
        (b"", None),
    ],
)
def test_sniff_format(head: bytes, expected: AssetFormat | None) -> None:
    assert sniff_format(head) is expected


def test_an_html_error_page_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "photo.jpg"
    path.write_bytes(b"<!doctype html><title>Access denied</title>")

    with pytest.raises(AssetFileError) as refused:
        inspect_asset_file(path=path, priced_by_page=False)

    assert str(refused.value) == "The downloaded file is not a JPEG, PNG, TIFF or PDF file."


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "photo.jpg"
    path.write_bytes(b"")

    with pytest.raises(AssetFileError, match=r"^The downloaded file is empty\.$"):
        inspect_asset_file(path=path, priced_by_page=False)


def test_a_pdf_is_refused_for_an_image_product(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf_bytes(2))

    with pytest.raises(AssetFileError) as refused:
        inspect_asset_file(path=path, priced_by_page=False)

    assert str(refused.value) == (
        "This product needs a JPEG, PNG or TIFF image; the file is a PDF."
    )


def test_an_image_is_refused_for_a_product_priced_by_page(tmp_path: Path) -> None:
    path = write_image(tmp_path / "photo", ".png")

    with pytest.raises(AssetFileError) as refused:
        inspect_asset_file(path=path, priced_by_page=True)

    assert str(refused.value) == (
        "This product is priced by page and needs a PDF file; the file is PNG."
    )


def test_a_pdf_for_a_product_priced_by_page_has_its_pages_counted(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf_bytes(24))

    info = inspect_asset_file(path=path, priced_by_page=True, declared_page_count=24)

    assert info == AssetFileInfo(
        format=AssetFormat.PDF, media_type="application/pdf", page_count=24
    )


def test_a_pdf_whose_pages_differ_from_the_order_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf_bytes(20))

    with pytest.raises(AssetFileError) as refused:
        inspect_asset_file(path=path, priced_by_page=True, declared_page_count=24)

    assert str(refused.value) == "The PDF has 20 pages, but the order gives pageCount 24."


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: data[:-40],
        lambda data: b"%PDF-1.4\n" + b"garbage " * 100,
        lambda data: b"%PDF-1.7\n%%EOF\n",
    ],
    ids=["half", "no-trailer", "garbage", "header-only"],
)
def test_a_damaged_pdf_is_refused_clearly(tmp_path: Path, damage) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(damage(pdf_bytes(4)))

    with pytest.raises(AssetFileError) as refused:
        pdf_page_count(path)

    assert str(refused.value).startswith("The PDF is damaged and cannot be read (")


def test_a_pdf_with_a_user_password_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf_bytes(2, password="secret"))

    with pytest.raises(AssetFileError) as refused:
        pdf_page_count(path)

    assert str(refused.value) == "The PDF is protected by a password; send it without one."


def test_a_pdf_with_only_an_owner_password_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf_bytes(3, password="owner", owner_only=True))

    assert pdf_page_count(path) == 3


def test_file_md5_matches_hashlib(tmp_path: Path) -> None:
    data = b"\x00\x01" * 1_000_000
    path = tmp_path / "a.bin"
    path.write_bytes(data)

    assert file_md5(path) == hashlib.md5(data).hexdigest()


def test_check_md5_accepts_a_match_in_any_case_and_no_expectation() -> None:
    digest = hashlib.md5(b"photo").hexdigest()

    check_md5(expected=digest.upper(), actual=digest)
    check_md5(expected=f" {digest} ", actual=digest)
    check_md5(expected=None, actual=digest)
    check_md5(expected="", actual=digest)


def test_check_md5_refuses_a_mismatch_naming_both_hashes() -> None:
    actual = hashlib.md5(b"photo").hexdigest()

    with pytest.raises(Md5Mismatch) as refused:
        check_md5(expected="0" * 32, actual=actual)

    assert str(refused.value) == (
        f"The downloaded file's MD5 hash is {actual}, but the order gives {'0' * 32}."
    )
    assert isinstance(refused.value, AssetFileError)


def test_a_pdf_beyond_the_page_limit_is_refused_before_its_pages_are_read(
    tmp_path: Path, settings: Any
) -> None:
    settings.PDF_MAX_PAGES = 50
    path = tmp_path / "huge.pdf"
    path.write_bytes(pdf_bytes(51))

    with pytest.raises(AssetFileError, match=r"^The PDF has 51 pages; at most 50 are accepted\.$"):
        pdf_page_count(path)
    path.write_bytes(pdf_bytes(50))
    assert pdf_page_count(path) == 50
