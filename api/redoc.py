"""Redoc's bundle as the docs pages load it: drf-spectacular-sidecar's own file, with the one
address it would fetch from the internet (the "API docs by Redocly" logo at cdn.redoc.ly, which
the pages' content security policy refuses) replaced by an empty image of this page's own, so
the docs ask nothing of another host and the browser reports no refusal."""

from functools import cache
from pathlib import Path

import drf_spectacular_sidecar
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

BUNDLE = (
    Path(drf_spectacular_sidecar.__file__).resolve().parent
    / "static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
)
LOGO_URL = "https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27/%3E"
# REDOC_DIST in SPECTACULAR_SETTINGS: the pages load ``{REDOC_DIST}/bundles/redoc.standalone.js``.
REDOC_DIST = "/redoc"


@cache
def redoc_bundle_bytes() -> bytes:
    source = BUNDLE.read_text(encoding="utf-8")
    if LOGO_URL not in source:  # a new Redoc: fail loudly rather than fetch from elsewhere
        raise RuntimeError(f"{BUNDLE} no longer names {LOGO_URL}")
    source = source.replace(LOGO_URL, EMPTY_IMAGE)
    # Its source map is not served: no reference to it.
    source = source.replace("//# sourceMappingURL=redoc.standalone.js.map", "")
    return source.encode("utf-8")


@require_GET
def redoc_bundle(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(redoc_bundle_bytes(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response
