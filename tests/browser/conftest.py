"""Pages in a real browser: Debian's Chromium driven by Playwright (never `playwright install`)."""

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium a test module (launching one takes about half a second); each test has a
    context of its own (``page``), so no cookie, storage or cache passes from test to test."""
    if not shutil.which("chromium"):
        pytest.fail(
            "Debian's chromium is missing: `make test` installs it (apt-get install chromium)."
        )
    # Playwright's sync API keeps an event loop in this thread; the tests' own ORM calls, and
    # their database fixtures', are still synchronous, so Django's async-safety guard is lifted
    # while the module's tests run.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            yield browser
            browser.close()
            # The last test's database teardown ran beside the event loop too (see ``page``).
            connections.close_all()


@pytest.fixture
def page(browser: Browser) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()
    # ORM calls made while Playwright's event loop runs open connections of their own (another
    # async context); closed here, in that context, none outlives the test database.
    connections.close_all()
