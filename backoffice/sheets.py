"""Google Sheets through gspread: the one module that reads worksheets and writes results back.

gspread signs in with the service account named by ``GOOGLE_SERVICE_ACCOUNT_FILE``;
``SHEETS_API_URL`` points it at another Sheets v4 compatible server, where
``SHEETS_ACCESS_TOKEN`` (a bearer token) may stand in for the service account. Reading a
worksheet is two requests (the spreadsheet's metadata, then the worksheet's values); writing
results back is one ``values:batchUpdate`` however many cells change. Every failure of the
sheet (not found, no permission, worksheet missing, quota, unreachable, the service account's
sign-in refused or its token endpoint unreachable, an answer that cannot be read) is a
``ValidationFailed`` naming ``spreadsheetId`` or ``worksheetName``.
"""

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import gspread
import requests
from django.conf import settings
from google.auth.exceptions import GoogleAuthError
from gspread.exceptions import APIError
from gspread.http_client import HTTPClient

from common.errors import ValidationFailed

GOOGLE_SHEETS_URL = "https://sheets.googleapis.com/v4/spreadsheets"
SPREADSHEET_ID = "spreadsheetId"
WORKSHEET_NAME = "worksheetName"
HEADER_SEARCH_ROWS = 10
DETAIL_LIMIT = 300
# What gspread and its sign-in raise when the sheet cannot be used: Google's error answers,
# the network, the service account's token refused or unreachable, an unreadable answer.
SHEET_FAILURES = (
    APIError,
    requests.RequestException,
    GoogleAuthError,
    KeyError,
    TypeError,
    ValueError,
)


def title_key(title: object) -> str:
    """A column title as matched: case-insensitive, spaces ignored (``Lab Order Id`` is
    ``laborderid``)."""
    return "".join(str(title or "").split()).lower()


@dataclass(frozen=True)
class Table:
    """A worksheet's cells as text: the header's sheet row number, the header's titles, and
    each data row below it with its sheet row number (1 is the first row)."""

    header_row: int
    titles: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]

    def column(self, title: str) -> int | None:
        """The 0-based index of the column titled ``title`` (as matched), or None."""
        key = title_key(title)
        return next((i for i, t in enumerate(self.titles) if title_key(t) == key), None)


def rows_read_most() -> int:
    """The most rows of a sheet or file that are read: the header search and
    ``BULK_MAX_ROWS`` data rows, and one more to tell that there are too many."""
    return HEADER_SEARCH_ROWS + int(settings.BULK_MAX_ROWS) + 1


def too_many_rows(field: str) -> ValidationFailed:
    limit = int(settings.BULK_MAX_ROWS)
    return ValidationFailed.single(
        field,
        "TooManyRows",
        f"The sheet has more than {limit} data rows, the most one job takes; split it.",
    )


def table_from_values(values: Sequence[Sequence[Any]], *, key_title: str, field: str) -> Table:
    """The table whose header is the first row (of the first few) holding ``key_title``; the
    rows below it, empty ones left out. No such header is a failure on ``field``, and so is
    more than ``BULK_MAX_ROWS`` data rows (``TooManyRows``)."""
    cells = [tuple("" if v is None else str(v).strip() for v in row) for row in values]
    key = title_key(key_title)
    for position, row in enumerate(cells[:HEADER_SEARCH_ROWS]):
        if any(title_key(cell) == key for cell in row):
            data = tuple(
                (number, row_cells)
                for number, row_cells in enumerate(cells[position + 1 :], start=position + 2)
                if any(row_cells)
            )
            if len(data) > int(settings.BULK_MAX_ROWS) or len(cells) >= rows_read_most():
                raise too_many_rows(field)
            return Table(header_row=position + 1, titles=row, rows=data)
    raise ValidationFailed.single(
        field, "NoHeaderRow", f"The worksheet has no header row with a '{key_title}' column."
    )


def column_letters(index: int) -> str:
    """A 0-based column index in A1 notation (0 is A, 26 is AA)."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters


def quoted(worksheet_name: str) -> str:
    return "'" + worksheet_name.replace("'", "''") + "'"


class _SheetsHttpClient(HTTPClient):
    """gspread's HTTP client sent to ``SHEETS_API_URL`` instead of Google's, with a timeout."""

    def __init__(self, auth: Any, session: requests.Session | None = None) -> None:
        super().__init__(auth, session)
        self.set_timeout(settings.SHEETS_TIMEOUT_SECONDS)

    def request(self, method: str, endpoint: str, *args: Any, **kwargs: Any) -> requests.Response:
        if endpoint.startswith(GOOGLE_SHEETS_URL):
            endpoint = settings.SHEETS_API_URL + endpoint[len(GOOGLE_SHEETS_URL) :]
        return super().request(method, endpoint, *args, **kwargs)


def sheets_client() -> HTTPClient:
    """gspread's HTTP client, signed in as settings say (one per process and settings)."""
    return _client(
        settings.SHEETS_API_URL, settings.SHEETS_ACCESS_TOKEN, settings.GOOGLE_SERVICE_ACCOUNT_FILE
    )


@functools.lru_cache(maxsize=4)
def _client(api_url: str, access_token: str, service_account_file: str) -> HTTPClient:
    if access_token:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {access_token}"
        client = gspread.Client(
            auth=cast(Any, None), session=session, http_client=_SheetsHttpClient
        )
        return client.http_client
    if service_account_file:
        try:
            client = gspread.service_account(
                filename=service_account_file, http_client=_SheetsHttpClient
            )
        except (OSError, ValueError) as exc:
            raise ValidationFailed.single(
                SPREADSHEET_ID, "SheetsUnavailable", f"The service account cannot be used: {exc}"
            ) from exc
        return client.http_client
    raise ValidationFailed.single(
        SPREADSHEET_ID,
        "SheetsUnavailable",
        "Google Sheets access is not configured (GOOGLE_SERVICE_ACCOUNT_FILE).",
    )


def _failure(exc: Exception, *, spreadsheet_id: str, worksheet_name: str) -> ValidationFailed:
    """What went wrong with the sheet, on the field it concerns."""
    if isinstance(exc, GoogleAuthError):
        detail = " ".join(str(exc).split())[:DETAIL_LIMIT]
        return ValidationFailed.single(
            SPREADSHEET_ID,
            "SignInFailed",
            f"The service account could not sign in to open spreadsheet '{spreadsheet_id}': "
            f"{detail or type(exc).__name__}",
        )
    unreadable = isinstance(exc, (KeyError, TypeError, ValueError))
    if isinstance(exc, requests.JSONDecodeError) or (
        unreadable and not isinstance(exc, requests.RequestException)
    ):
        return ValidationFailed.single(
            SPREADSHEET_ID,
            "SheetsUnavailable",
            f"Google Sheets answered something unreadable for spreadsheet '{spreadsheet_id}'.",
        )
    if isinstance(exc, APIError):
        status = exc.response.status_code
        detail = str(exc.error.get("message") or "") if isinstance(exc.error, dict) else ""
        if status == 404:
            return ValidationFailed.single(
                SPREADSHEET_ID, "NotFound", f"Spreadsheet '{spreadsheet_id}' was not found."
            )
        if status in (401, 403):
            return ValidationFailed.single(
                SPREADSHEET_ID,
                "NoPermission",
                f"The service has no permission on spreadsheet '{spreadsheet_id}'.",
            )
        if status == 429:
            return ValidationFailed.single(
                SPREADSHEET_ID, "QuotaExceeded", "The Google Sheets quota is used up; try later."
            )
        if status == 400:
            return ValidationFailed.single(
                WORKSHEET_NAME,
                "Invalid",
                f"Worksheet '{worksheet_name}' cannot be read: {detail or 'bad request'}.",
            )
        return ValidationFailed.single(
            SPREADSHEET_ID, "SheetsUnavailable", f"Google Sheets answered {status}: {detail}"
        )
    return ValidationFailed.single(
        SPREADSHEET_ID, "SheetsUnavailable", f"Google Sheets could not be reached: {exc}"
    )


def worksheet_values(*, spreadsheet_id: str, worksheet_name: str) -> list[list[Any]]:
    """Every value of the worksheet as the sheet shows it."""
    client = sheets_client()
    try:
        metadata = client.fetch_sheet_metadata(
            spreadsheet_id, params={"includeGridData": "false", "fields": "sheets.properties"}
        )
        titles = [s["properties"]["title"] for s in metadata.get("sheets", [])]
        if worksheet_name not in titles:
            raise ValidationFailed.single(
                WORKSHEET_NAME,
                "NotFound",
                f"Spreadsheet '{spreadsheet_id}' has no worksheet '{worksheet_name}'.",
            )
        # Whole rows, no more than are ever read: a longer sheet is refused, not fetched.
        rows = f"{quoted(worksheet_name)}!1:{rows_read_most()}"
        answer = client.values_get(spreadsheet_id, rows)
    except SHEET_FAILURES as exc:
        raise _failure(exc, spreadsheet_id=spreadsheet_id, worksheet_name=worksheet_name) from exc
    return list(answer.get("values", []))[: rows_read_most()]


def sheet_read(
    *, spreadsheet_id: str, worksheet_name: str, key_title: str = "Lab Order Id"
) -> Table:
    """The worksheet as a table under its header row (the row holding ``key_title``)."""
    values = worksheet_values(spreadsheet_id=spreadsheet_id, worksheet_name=worksheet_name)
    return table_from_values(values, key_title=key_title, field=WORKSHEET_NAME)


def sheet_cells_write(
    *, spreadsheet_id: str, worksheet_name: str, cells: Mapping[tuple[int, int], str]
) -> None:
    """Write ``cells`` ((sheet row, 0-based column) → text) in one ``values:batchUpdate``."""
    if not cells:
        return
    data = [
        {"range": f"{quoted(worksheet_name)}!{column_letters(col)}{row}", "values": [[value]]}
        for (row, col), value in sorted(cells.items())
    ]
    try:
        sheets_client().values_batch_update(
            spreadsheet_id, body={"valueInputOption": "RAW", "data": data}
        )
    except SHEET_FAILURES as exc:
        raise _failure(exc, spreadsheet_id=spreadsheet_id, worksheet_name=worksheet_name) from exc
