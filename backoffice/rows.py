"""The rows of a bulk sheet (a Google worksheet, or an uploaded .csv or .xlsx): the column
titles, each row parsed, and the cells a result writes back."""

import csv
import io
import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from backoffice.sheets import Table, rows_read_most, table_from_values, too_many_rows
from common.errors import ValidationFailed
from common.ids import PREFIXES, id_number

LAB_ORDER_ID = "Lab Order Id"
MESSAGE = "Message"
NEW_LAB_ORDER_ID = "New Lab Order Id"
LAST_ACTIVITY = "Last Activity"
LABS = "Labs"
CANCEL_OPTION = "Cancel Option"
SKIP_ROW = "Skip Row"
WRITTEN_BACK = (MESSAGE, NEW_LAB_ORDER_ID, LAST_ACTIVITY)
TRUE_WORDS = {"true", "yes", "1", "y"}
FILE_FIELD = "file"
# Each tool's columns and what they mean, as its form explains them and its template has them.
RESUBMISSION_COLUMNS = (
    (
        LAB_ORDER_ID,
        "The lab order to resubmit: our shipment id (shp_123 or 123) or the lab's own order "
        "reference, as the order page shows it.",
    ),
    (LABS, "Optional: the lab codes this row may go to, comma separated (when no lab is chosen)."),
    (
        CANCEL_OPTION,
        "Optional: CancelOriginal, KeepOriginal or CancelIfPossible for this row. A shipped "
        "lab order (a lost or damaged parcel) is reprinted with KeepOriginal alone.",
    ),
    (SKIP_ROW, "Optional: TRUE, yes or 1 leaves the row as it is."),
    (MESSAGE, "Written back: what was done with the row, or why nothing was."),
    (NEW_LAB_ORDER_ID, "Written back: the new shipment's number once resubmitted."),
    (LAST_ACTIVITY, "Written back: when the row's result was written (ISO 8601)."),
)
SHIPPING_COLUMNS = (
    (
        LAB_ORDER_ID,
        "A lab order at a Site Flow lab: our shipment id (shp_123 or 123) or the lab's own "
        "order reference.",
    ),
    (SKIP_ROW, "Optional: TRUE, yes or 1 leaves the row as it is."),
    (MESSAGE, "Written back: what was done with the row, or why nothing was."),
    (LAST_ACTIVITY, "Written back: when the row's result was written (ISO 8601)."),
)
TEMPLATE_FORMATS = ("csv", "xlsx")


@dataclass(frozen=True)
class RowOutcome:
    """What a job did with a row: the row's ``Message`` and, resubmitted, the new shipment."""

    successful: bool
    message: str
    new_shipment_id: int | None = None


@dataclass(frozen=True)
class SheetRow:
    """One data row as parsed: ``lab_order_id`` is None when the cell names no shipment."""

    row_index: int
    lab_order_text: str
    lab_order_id: int | None
    message: str
    new_lab_order_id: int | None
    last_activity: datetime | None
    labs: tuple[str, ...]
    cancel_option: str
    skip_row: bool


def shipment_number(text: str) -> int | None:
    """``shp_123`` or ``123`` as 123; None for anything else (or blank). Only ASCII digits
    count: full-width or other Unicode digits name no shipment."""
    value = text.strip()
    if value.endswith(".0"):  # a number cell read back from a spreadsheet
        value = value[:-2]
    return id_number(PREFIXES["shipment"], value, allow_bare=True)


def rows_parse(table: Table) -> list[SheetRow]:
    """Every data row of the table (``row_index`` is the sheet's row number)."""

    def cell(cells: Sequence[str], title: str) -> str:
        index = table.column(title)
        return cells[index].strip() if index is not None and index < len(cells) else ""

    rows = []
    for number, cells in table.rows:
        text = cell(cells, LAB_ORDER_ID)
        cancel = cell(cells, CANCEL_OPTION)
        rows.append(
            SheetRow(
                row_index=number,
                lab_order_text=text,
                lab_order_id=shipment_number(text),
                message=cell(cells, MESSAGE),
                new_lab_order_id=shipment_number(cell(cells, NEW_LAB_ORDER_ID)),
                last_activity=_time(cell(cells, LAST_ACTIVITY)),
                labs=tuple(
                    code.strip().lower() for code in cell(cells, LABS).split(",") if code.strip()
                ),
                cancel_option=cancel,
                skip_row=cell(cells, SKIP_ROW).lower() in TRUE_WORDS,
            )
        )
    return rows


def _time(text: str) -> datetime | None:
    try:
        return parse_datetime(text) if text else None
    except ValueError:
        return None


def result_columns(table: Table) -> dict[str, int]:
    """Where each written-back column is: its index in the header, or a new column after the
    last title when the sheet lacks it."""
    columns: dict[str, int] = {}
    next_free = len(table.titles)
    for title in WRITTEN_BACK:
        index = table.column(title)
        if index is None:
            index = next_free
            next_free += 1
        columns[title] = index
    return columns


# --- uploaded files -------------------------------------------------------------------------


def file_name_check(name: object) -> str:
    """An uploaded file's name as kept (and given back in the results' file name): a .csv or
    .xlsx name of at most 200 characters, without control characters or a folder."""
    text = str(name) if isinstance(name, str) else ""
    if (
        not text
        or len(text) > 200
        or any(ord(c) < 32 or ord(c) == 127 for c in text)
        or "/" in text
        or "\\" in text
    ):
        raise ValidationFailed.single(
            FILE_FIELD, "Invalid", "The file's name must be a plain .csv or .xlsx file name."
        )
    if not text.lower().endswith((".csv", ".xlsx")):
        raise ValidationFailed.single(FILE_FIELD, "Invalid", "Upload a .csv or an .xlsx file.")
    return text


def file_values_check(values: object) -> list[list[str]]:
    """Cells carried from the review to the confirmation: a list of rows of texts, no longer
    than a sheet may be."""
    if not isinstance(values, list) or not all(
        isinstance(row, list) and all(isinstance(cell, str) for cell in row) for row in values
    ):
        raise ValidationFailed.single(FILE_FIELD, "Invalid", "The file's cells are malformed.")
    if len(values) >= rows_read_most():
        raise too_many_rows(FILE_FIELD)
    return values


def file_values(name: str, content: bytes) -> list[list[str]]:
    """The cells of an uploaded .csv or .xlsx (its first worksheet) as text. A file over
    ``BULK_UPLOAD_MAX_BYTES`` is ``TooLarge``, and so is a workbook whose parts unpack to more
    than ``BULK_UPLOAD_MAX_UNPACKED_BYTES`` (checked before anything is unpacked); one with more
    than ``BULK_MAX_ROWS`` data rows is ``TooManyRows`` and one with more than
    ``BULK_UPLOAD_MAX_CELLS`` cells ``TooManyCells`` (reading stops there); all on ``file``.
    A workbook is read row by row, each row as wide as its own last cell: the width its
    ``dimension`` claims is not believed."""
    lowered = file_name_check(name).lower()
    if len(content) > int(settings.BULK_UPLOAD_MAX_BYTES):
        raise ValidationFailed.single(
            FILE_FIELD,
            "TooLarge",
            f"The file is over {settings.BULK_UPLOAD_MAX_BYTES} bytes, the largest upload taken.",
        )
    if lowered.endswith(".csv"):
        try:
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValidationFailed.single(FILE_FIELD, "Invalid", "The CSV is not UTF-8.") from exc
        try:
            return _rows_read(list(row) for row in csv.reader(io.StringIO(text)))
        except csv.Error as exc:
            raise ValidationFailed.single(
                FILE_FIELD, "Invalid", f"The CSV cannot be read: {exc}."
            ) from exc
    _workbook_size_check(content)
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception as exc:
        raise ValidationFailed.single(
            FILE_FIELD, "Invalid", "The file is not a readable .xlsx workbook."
        ) from exc
    try:
        sheet = book.worksheets[0]
        sheet.reset_dimensions()  # type: ignore[union-attr]
        return _rows_read([_text(v) for v in row] for row in sheet.iter_rows(values_only=True))
    except ValidationFailed:
        raise
    except Exception as exc:
        raise ValidationFailed.single(
            FILE_FIELD, "Invalid", "The file is not a readable .xlsx workbook."
        ) from exc
    finally:
        book.close()


def _workbook_size_check(content: bytes) -> None:
    """Refuses (``TooLarge``) a workbook whose parts unpack to more than
    ``BULK_UPLOAD_MAX_UNPACKED_BYTES``, from the sizes its zip directory declares: zipfile
    never unpacks more of a part than its declared size, so a part that lies fails its
    checksum instead of growing."""
    limit = int(settings.BULK_UPLOAD_MAX_UNPACKED_BYTES)
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise ValidationFailed.single(
            FILE_FIELD, "Invalid", "The file is not a readable .xlsx workbook."
        ) from exc
    if unpacked > limit:
        raise ValidationFailed.single(
            FILE_FIELD,
            "TooLarge",
            f"The workbook unpacks to {unpacked} bytes, over the {limit} taken.",
        )


def _rows_read(rows: Iterable[list[str]]) -> list[list[str]]:
    """The rows, stopping (``TooManyRows``) past the most a sheet may have, or
    (``TooManyCells``) past ``BULK_UPLOAD_MAX_CELLS`` cells: a long or wide file is never
    held whole."""
    most_cells = int(settings.BULK_UPLOAD_MAX_CELLS)
    values = []
    cells = 0
    for row in rows:
        cells += len(row)
        if cells > most_cells:
            raise ValidationFailed.single(
                FILE_FIELD,
                "TooManyCells",
                f"The file has more than {most_cells} cells, the most one job takes; "
                "remove the columns the tool does not use, or split it.",
            )
        values.append(row)
        if len(values) >= rows_read_most():
            raise too_many_rows(FILE_FIELD)
    return values


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def file_table(values: Sequence[Sequence[Any]]) -> Table:
    return table_from_values(values, key_title=LAB_ORDER_ID, field=FILE_FIELD)


def template_file(*, name: str, columns: Sequence[tuple[str, str]]) -> tuple[bytes, str]:
    """An empty sheet with the tool's column titles, as ``name``'s format (.csv or .xlsx)."""
    return file_with_results(name=name, values=[[title for title, _ in columns]], cells={})


# A cell starting so is a formula to a spreadsheet program opening the file (OWASP's CSV
# injection): the results file gives it as text, a ' before it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# A CSV cell holding one of these is quoted: every separator a spreadsheet program may split
# on (its locale's ; as well as the comma, a tab, a pipe), the quote and line breaks. Python's
# csv quotes only for its own delimiter, which leaves ``a;=1+1`` a live formula to a program
# splitting on ;.
CSV_QUOTED_WHEN = frozenset(',;\t|"\r\n')
# Where a field may start inside a CSV cell for a program that splits on another separator
# than ours, or ignores quotes there (after a separator or line break, past blanks and quotes)
# and a formula would start: a ' goes before it, as before a cell's own first character.
_FORMULA_IN_CELL = re.compile(r'(^|[,;\t|\r\n])([\s"]*)(?=[=+\-@])')


def csv_cell(value: Any) -> str:
    """A cell as a CSV results file writes it: every formula any field of it could start
    with given as text, and in quotes (a quote doubled) when it holds a separator, a quote or
    a line break."""
    text = _FORMULA_IN_CELL.sub(r"\1\2'", "" if value is None else str(value))
    if CSV_QUOTED_WHEN.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def cell_neutralised(value: Any) -> Any:
    """A cell as a results file holds it: text that would start a formula made plain text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def file_with_results(
    *, name: str, values: Sequence[Sequence[Any]], cells: dict[tuple[int, int], str]
) -> tuple[bytes, str]:
    """The uploaded file again, in its own format, with ``cells`` ((row, column) → text)
    written in; the bytes and their content type. No cell is a live formula: the sheet's own
    cells and the written ones (a lab's message) alike are neutralised (``cell_neutralised``),
    and a CSV quotes every cell a program splitting on another separator would cut
    (``csv_cell``)."""
    grid = [list(row) for row in values]
    for (row, col), value in cells.items():
        while len(grid) < row:
            grid.append([])
        line = grid[row - 1]
        while len(line) <= col:
            line.append("")
        line[col] = value
    grid = [[cell_neutralised(cell) for cell in line] for line in grid]
    if name.lower().endswith(".xlsx"):
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        for line in grid:
            sheet.append(line)
        out = io.BytesIO()
        book.save(out)
        return (
            out.getvalue(),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    text = "".join(",".join(csv_cell(cell) for cell in line) + "\r\n" for line in grid)
    return text.encode(), "text/csv"
