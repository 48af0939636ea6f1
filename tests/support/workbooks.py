"""Workbooks written part by part, as a hostile uploader would: a ``dimension`` that claims
more than the sheet holds, cells far to the right, shared strings that unpack to far more than
the file's size. openpyxl writes none of these itself."""

import io
import zipfile
from collections.abc import Iterable, Sequence
from xml.sax.saxutils import escape

OFFICE = "application/vnd.openxmlformats-officedocument.spreadsheetml"
PACKAGE = "http://schemas.openxmlformats.org/package/2006"
RELATIONSHIP = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
CONTENT_TYPES = (
    f'{XML_DECLARATION}<Types xmlns="{PACKAGE}/content-types">'
    f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    f'<Override PartName="/xl/workbook.xml" ContentType="{OFFICE}.sheet.main+xml"/>'
    f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{OFFICE}.worksheet+xml"/>'
    f'<Override PartName="/xl/sharedStrings.xml" ContentType="{OFFICE}.sharedStrings+xml"/>'
    "</Types>"
)
PACKAGE_RELATIONSHIPS = (
    f'{XML_DECLARATION}<Relationships xmlns="{PACKAGE}/relationships">'
    f'<Relationship Id="rId1" Type="{RELATIONSHIP}/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>"
)
WORKBOOK = (
    f'{XML_DECLARATION}<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/'
    f'main" xmlns:r="{RELATIONSHIP}">'
    '<sheets><sheet name="Rows" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
WORKBOOK_RELATIONSHIPS = (
    f'{XML_DECLARATION}<Relationships xmlns="{PACKAGE}/relationships">'
    f'<Relationship Id="rId1" Type="{RELATIONSHIP}/worksheet" Target="worksheets/sheet1.xml"/>'
    f'<Relationship Id="rId2" Type="{RELATIONSHIP}/sharedStrings" Target="sharedStrings.xml"/>'
    "</Relationships>"
)
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def workbook_bytes(
    cells: Iterable[tuple[str, str]],
    *,
    dimension: str | None = None,
    shared_strings: Sequence[str] | Iterable[str] = (),
) -> bytes:
    """An .xlsx whose one worksheet holds ``cells`` (reference such as ``B3``, inline text), in
    the order given (one ``row`` element per row number), with a ``dimension`` element when
    given and ``shared_strings`` as its shared strings part (deflated)."""
    rows: dict[int, list[str]] = {}
    for reference, text in cells:
        number = int(reference.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        rows.setdefault(number, []).append(
            f'<c r="{reference}" t="inlineStr"><is><t>{escape(text)}</t></is></c>'
        )
    sheet = io.StringIO()
    sheet.write(
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="{MAIN}">'
    )
    if dimension:
        sheet.write(f'<dimension ref="{dimension}"/>')
    sheet.write("<sheetData>")
    for number, row in rows.items():
        sheet.write(f'<row r="{number}">{"".join(row)}</row>')
    sheet.write("</sheetData></worksheet>")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr("_rels/.rels", PACKAGE_RELATIONSHIPS)
        archive.writestr("xl/workbook.xml", WORKBOOK)
        archive.writestr("xl/_rels/workbook.xml.rels", WORKBOOK_RELATIONSHIPS)
        archive.writestr("xl/worksheets/sheet1.xml", sheet.getvalue())
        with archive.open("xl/sharedStrings.xml", "w") as strings:
            strings.write(f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{MAIN}">'.encode())
            for text in shared_strings:
                strings.write(f"<si><t>{escape(text)}</t></si>".encode())
            strings.write(b"</sst>")
    return out.getvalue()
