from collections.abc import Iterator

import pytest

from tests.support.sheets import SheetsServer


@pytest.fixture
def sheets(settings) -> Iterator[SheetsServer]:  # type: ignore[no-untyped-def]
    """The local Sheets v4 server, with the service pointed at it (bearer token)."""
    server = SheetsServer()
    server.start()
    settings.SHEETS_API_URL = server.api_url
    settings.SHEETS_ACCESS_TOKEN = server.token
    settings.BULK_WRITE_BACK_SECONDS = 3600.0
    yield server
    server.stop()
