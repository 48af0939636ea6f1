"""An admin change page submitted as a browser would: every field's current value as the page
renders it, with the test's changes on top."""

from html.parser import HTMLParser

from django.test import Client


class _FormValues(HTMLParser):
    """The values a browser would submit from the page's change form (``id`` ending in
    ``_form``): text inputs, checked boxes and radios, selected options, text areas."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._in_form = False
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form" and found.get("id", "").endswith("_form"):
            self._in_form = True
        if not self._in_form:
            return
        name = found.get("name", "")
        if tag == "input" and name:
            kind = found.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in found:
                    self.values[name] = found.get("value", "on")
            elif kind not in ("submit", "button", "file"):
                self.values[name] = found.get("value", "")
        elif tag == "select" and name:
            self._select = name
            self.values.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in found:
            self.values[self._select] = found.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = ""

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def admin_change_post(client: Client, url: str, changes: dict[str, str]):  # type: ignore[no-untyped-def]
    """Submits the change form at ``url`` with ``changes`` over the values it shows; the
    response."""
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    parser = _FormValues()
    parser.feed(page.content.decode())
    assert parser.values, "no change form on the page"
    return client.post(url, {**parser.values, **changes, "_save": "Save"})
