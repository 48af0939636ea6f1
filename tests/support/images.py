"""Files for the asset server to serve: photos, artwork, books, and a decompression bomb."""

import hashlib
import io

from PIL import Image
from pypdf import PdfWriter


def jpeg_bytes(
    width: int = 600, height: int = 400, colour: tuple[int, int, int] = (200, 80, 40)
) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "JPEG", quality=90)
    return out.getvalue()


def png_bytes(width: int = 300, height: int = 450) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (20, 120, 200)).save(out, "PNG")
    return out.getvalue()


def pdf_bytes(pages: int) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=842, height=595)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def bomb_png_bytes() -> bytes:
    """15000x15000 pixels (225 megapixels, over the print-ready limit) in a few hundred KB."""
    import pyvips

    return bytes(pyvips.Image.black(15_000, 15_000).pngsave_buffer(compression=9))


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()
