"""A local Google Sheets v4 compatible server for tests: a real HTTP server on loopback.

It answers what gspread asks of the Sheets API: a spreadsheet's metadata, a worksheet's values
(``values/{range}``), ``values/{range}`` updates and ``values:batchUpdate``, and
``:batchUpdate``. It wants ``Authorization: Bearer <token>`` (401 otherwise), answers Google's
error bodies (404 ``NOT_FOUND`` for an unknown spreadsheet, 403 ``PERMISSION_DENIED`` for one it
is told the caller may not open, 400 for a range naming no worksheet), and counts every request
(``calls``) so tests and the benchmark can tell how many the service made.
"""

import json
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from werkzeug import Request, Response
from werkzeug.serving import BaseWSGIServer, make_server

PREFIX = "/v4/spreadsheets"
CELL = re.compile(r"^([A-Za-z]+)([0-9]+)$")


def column_index(letters: str) -> int:
    index = 0
    for char in letters.upper():
        index = index * 26 + ord(char) - ord("A") + 1
    return index - 1


def split_range(text: str) -> tuple[str, str]:
    """``'My sheet'!B5`` as (``My sheet``, ``B5``); a bare title as (title, "")."""
    if text.startswith("'"):
        end = 1
        title = ""
        while end < len(text):
            if text[end] == "'":
                if end + 1 < len(text) and text[end + 1] == "'":
                    title += "'"
                    end += 2
                    continue
                break
            title += text[end]
            end += 1
        rest = text[end + 1 :]
        return title, rest[1:] if rest.startswith("!") else rest
    title, _, cells = text.partition("!")
    return title, cells


class LoopbackServer:
    """A WSGI app (``_wsgi``) served on a free loopback port in a thread of the test."""

    _server: BaseWSGIServer | None = None

    def start(self) -> None:
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def origin(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        raise NotImplementedError


class SheetsServer(LoopbackServer):
    def __init__(self, *, token: str = "sheets-test-token") -> None:
        self.token = token
        # spreadsheet id -> worksheet title -> rows of cell texts
        self.spreadsheets: dict[str, dict[str, list[list[str]]]] = {}
        self.forbidden: set[str] = set()
        self.quota_exceeded = False
        self.calls: list[tuple[str, str]] = []
        self.rows_answered = 0  # rows sent back by every values get, in all
        self._lock = threading.Lock()

    @property
    def api_url(self) -> str:
        """What ``SHEETS_API_URL`` is set to."""
        return f"{self.origin}{PREFIX}"

    # --- what tests do ----------------------------------------------------------------------

    def put(self, spreadsheet_id: str, worksheet: str, rows: list[list[Any]]) -> None:
        with self._lock:
            book = self.spreadsheets.setdefault(spreadsheet_id, {})
            book[worksheet] = [["" if v is None else str(v) for v in row] for row in rows]

    def values(self, spreadsheet_id: str, worksheet: str) -> list[list[str]]:
        with self._lock:
            return [list(row) for row in self.spreadsheets[spreadsheet_id][worksheet]]

    def column(self, spreadsheet_id: str, worksheet: str, title: str) -> list[str]:
        """The cells under the column titled ``title`` in the first row (one per data row)."""
        rows = self.values(spreadsheet_id, worksheet)
        index = rows[0].index(title)
        return [row[index] if index < len(row) else "" for row in rows[1:]]

    def write_calls(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] in ("PUT", "POST")]

    # --- the HTTP side ----------------------------------------------------------------------

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        with self._lock:
            self.calls.append((request.method, request.path))
            response = self._answer(request)
        return response(environ, start_response)

    def _answer(self, request: Request) -> Response:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
        if self.quota_exceeded:
            return _error(
                429, "Quota exceeded for quota metric 'Read requests'.", "RESOURCE_EXHAUSTED"
            )
        raw = unquote(request.environ.get("RAW_URI", "").split("?")[0]) or request.path
        if not raw.startswith(PREFIX + "/"):
            return _error(404, "Not found.", "NOT_FOUND")
        rest = raw[len(PREFIX) + 1 :]
        spreadsheet_id, _, tail = rest.partition("/")
        suffix = ""
        if ":" in spreadsheet_id:
            spreadsheet_id, suffix = spreadsheet_id.split(":", 1)
        book = self.spreadsheets.get(spreadsheet_id)
        if spreadsheet_id in self.forbidden:
            return _error(403, "The caller does not have permission", "PERMISSION_DENIED")
        if book is None:
            return _error(404, "Requested entity was not found.", "NOT_FOUND")
        body = json.loads(request.get_data() or b"null")
        if not tail and suffix == "" and request.method == "GET":
            return _json(200, _metadata(spreadsheet_id, book))
        if not tail and suffix == "batchUpdate" and request.method == "POST":
            return _json(200, {"spreadsheetId": spreadsheet_id, "replies": []})
        if tail == "values:batchUpdate" and request.method == "POST":
            for entry in body.get("data", []):
                problem = self._write(book, entry["range"], entry.get("values", []))
                if problem is not None:
                    return problem
            return _json(200, {"spreadsheetId": spreadsheet_id, "totalUpdatedCells": 0})
        if tail.startswith("values/"):
            text = tail[len("values/") :]
            if request.method == "GET":
                title, cells = split_range(text)
                if title not in book:
                    return _error(400, f"Unable to parse range: {text}", "INVALID_ARGUMENT")
                values = book[title]
                rows = re.fullmatch(r"(\d+):(\d+)", cells)  # whole rows, as Sheets reads them
                if rows:
                    values = values[int(rows.group(1)) - 1 : int(rows.group(2))]
                self.rows_answered += len(values)
                return _json(200, {"range": text, "majorDimension": "ROWS", "values": values})
            if request.method == "PUT":
                problem = self._write(book, text, body.get("values", []))
                return problem or _json(200, {"spreadsheetId": spreadsheet_id})
        return _error(404, "Not found.", "NOT_FOUND")

    def _write(
        self, book: dict[str, list[list[str]]], text: str, values: list[list[Any]]
    ) -> Response | None:
        title, cells = split_range(text)
        start = CELL.match(cells.split(":")[0]) if cells else None
        if title not in book or start is None:
            return _error(400, f"Unable to parse range: {text}", "INVALID_ARGUMENT")
        rows = book[title]
        first_col, first_row = column_index(start.group(1)), int(start.group(2)) - 1
        for r, line in enumerate(values):
            while len(rows) <= first_row + r:
                rows.append([])
            row = rows[first_row + r]
            for c, value in enumerate(line):
                while len(row) <= first_col + c:
                    row.append("")
                row[first_col + c] = "" if value is None else str(value)
        return None


def _metadata(spreadsheet_id: str, book: dict[str, list[list[str]]]) -> dict[str, Any]:
    return {
        "spreadsheetId": spreadsheet_id,
        "properties": {"title": f"Spreadsheet {spreadsheet_id}", "locale": "en_GB"},
        "sheets": [
            {
                "properties": {
                    "sheetId": index,
                    "title": title,
                    "index": index,
                    "sheetType": "GRID",
                    "gridProperties": {
                        "rowCount": max(len(rows), 1000),
                        "columnCount": max((len(r) for r in rows), default=26),
                    },
                }
            }
            for index, (title, rows) in enumerate(book.items())
        ],
    }


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _error(status: int, message: str, reason: str) -> Response:
    return _json(status, {"error": {"code": status, "message": message, "status": reason}})


class TokenServer(LoopbackServer):
    """A local OAuth 2.0 token endpoint, as a service account's ``token_uri`` names it: it
    answers the signed JWT grant gspread's sign-in posts with an access token, or, when told
    to fail, with Google's error body and status (a revoked key is 400 ``invalid_grant``)."""

    def __init__(self, *, access_token: str) -> None:
        self.access_token = access_token
        self.failure: tuple[int, dict[str, str]] | None = None
        self.grants: list[str] = []

    @property
    def token_uri(self) -> str:
        return f"{self.origin}/token"

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        self.grants.append(request.form.get("grant_type", ""))
        if self.failure is not None:
            status, body = self.failure
            return _json(status, body)(environ, start_response)
        answer = {"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"}
        return _json(200, answer)(environ, start_response)


def service_account_file(path: Path, *, token_uri: str) -> Path:
    """A service account key file (a fresh RSA key) whose sign-in goes to ``token_uri``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "print-tests",
                "private_key_id": "key-1",
                "private_key": pem,
                "client_email": "bulk-tools@print-tests.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": token_uri,
            }
        )
    )
    return path
