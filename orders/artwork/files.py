"""What a downloaded asset file really is, checked before anything is made from it.

The format comes from the file's first bytes, never from its name or the server's
``Content-Type``, which merchants' hosts often get wrong. Image products take JPEG, PNG or TIFF;
products priced by page take PDF, whose pages are counted with pypdf because the count decides
the price. Each failure is an ``AssetFileError`` whose message becomes the order issue text.
"""

import enum
import hashlib
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from pypdf import PdfReader
from pypdf.errors import PyPdfError

# A PDF may have a little junk before its header; readers look this far for it.
_PDF_HEADER_WINDOW = 1024
_HASH_CHUNK_BYTES = 1024 * 1024


class AssetFormat(enum.StrEnum):
    JPEG = "jpeg"
    PNG = "png"
    TIFF = "tiff"
    PDF = "pdf"

    @property
    def media_type(self) -> str:
        return _MEDIA_TYPES[self]


_MEDIA_TYPES = {
    AssetFormat.JPEG: "image/jpeg",
    AssetFormat.PNG: "image/png",
    AssetFormat.TIFF: "image/tiff",
    AssetFormat.PDF: "application/pdf",
}
IMAGE_FORMATS = frozenset({AssetFormat.JPEG, AssetFormat.PNG, AssetFormat.TIFF})


@dataclass(frozen=True)
class AssetFileInfo:
    format: AssetFormat
    media_type: str
    page_count: int | None  # PDFs only


class AssetFileError(Exception):
    """The file cannot be used as this asset; the message says why, for the merchant."""


class Md5Mismatch(AssetFileError):
    """The downloaded bytes are not the file the merchant described."""


def sniff_format(head: bytes) -> AssetFormat | None:
    """The format the leading bytes announce, or None for anything else."""
    if head.startswith(b"\xff\xd8\xff"):
        return AssetFormat.JPEG
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return AssetFormat.PNG
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):  # classic and BigTIFF
        return AssetFormat.TIFF
    if b"%PDF-" in head[:_PDF_HEADER_WINDOW]:
        return AssetFormat.PDF
    return None


def file_md5(path: Path) -> str:
    """Hex md5 of a stored file, read in chunks (downloads compute it while streaming)."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as source:
        while chunk := source.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def check_md5(*, expected: str | None, actual: str) -> None:
    """Raise ``Md5Mismatch`` when the merchant gave a hash and the file has another one."""
    if not expected:
        return
    if expected.strip().lower() != actual.lower():
        raise Md5Mismatch(
            f"The downloaded file's MD5 hash is {actual.lower()}, "
            f"but the order gives {expected.strip()}."
        )


def inspect_asset_file(
    *, path: Path, priced_by_page: bool, declared_page_count: int | None = None
) -> AssetFileInfo:
    """Check that the file is a format the product takes; count a PDF's pages.

    ``declared_page_count`` is the asset's ``pageCount`` from the order: when given for a PDF
    it must equal the real count, since the price was worked out from it.
    """
    with path.open("rb") as source:
        head = source.read(_PDF_HEADER_WINDOW)
    found = sniff_format(head)
    if found is None:
        what = "empty" if not head else "not a JPEG, PNG, TIFF or PDF file"
        raise AssetFileError(f"The downloaded file is {what}.")
    if priced_by_page and found is not AssetFormat.PDF:
        raise AssetFileError(
            f"This product is priced by page and needs a PDF file; the file is {found.name}."
        )
    if not priced_by_page and found is AssetFormat.PDF:
        raise AssetFileError("This product needs a JPEG, PNG or TIFF image; the file is a PDF.")
    page_count = None
    if found is AssetFormat.PDF:
        page_count = pdf_page_count(path)
        if declared_page_count is not None and declared_page_count != page_count:
            raise AssetFileError(
                f"The PDF has {page_count} pages, but the order gives pageCount "
                f"{declared_page_count}."
            )
    return AssetFileInfo(format=found, media_type=found.media_type, page_count=page_count)


def pdf_page_count(path: Path) -> int:
    """The number of pages, or ``AssetFileError`` for a PDF that cannot be read.

    pypdf reads leniently (real-world PDFs often have small cross-reference errors a lab's RIP
    tolerates too) but every page must still resolve to a page with a media box; a truncated
    or garbled file fails here rather than at the lab. A PDF with only an owner password (print
    restrictions) opens with the empty user password and is accepted.
    """
    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise AssetFileError("The PDF is protected by a password; send it without one.")
        # The page tree's own count first: walking every page of a huge PDF costs seconds of
        # CPU per attempt, so a PDF beyond the limit is refused before any page is read.
        declared = int(reader.root_object["/Pages"]["/Count"])  # type: ignore[index]
        if declared > settings.PDF_MAX_PAGES:
            raise AssetFileError(
                f"The PDF has {declared} pages; at most {settings.PDF_MAX_PAGES} are accepted."
            )
        pages = reader.pages
        for page in pages:
            page.mediabox  # noqa: B018 -- resolving it proves the page object is intact
        count = len(pages)
    except AssetFileError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise AssetFileError(f"The PDF is damaged and cannot be read ({exc}).") from exc
    if count < 1:
        raise AssetFileError("The PDF has no pages.")
    return count
