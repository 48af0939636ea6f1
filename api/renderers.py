from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer

from api.trace import current_trace_parent


class ApiJsonRenderer(JSONRenderer):
    """JSON with ``traceParent`` in every object body."""

    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if isinstance(data, dict) and "traceParent" not in data:
            data = {**data, "traceParent": current_trace_parent()}
        if data is not None:
            try:
                return _fast(data)
            except orjson.JSONEncodeError:
                pass  # a type orjson does not take: the encoder of the framework decides
        return super().render(data, accepted_media_type, renderer_context)


def _fast(data: Any) -> bytes:
    """The bytes ``JSONRenderer`` writes (compact, UTF-8, U+2028 and U+2029 escaped), by orjson;
    dates, times and decimals are left to raise, so that they go through the framework's
    encoder as before."""
    rendered = orjson.dumps(data, option=orjson.OPT_PASSTHROUGH_DATETIME)
    # ASCII text holds neither (and is told at a glance: searching a list page of documents
    # for the two bytes took longer than writing it).
    if not rendered.isascii() and b"\xe2\x80" in rendered:
        rendered = rendered.replace(b"\xe2\x80\xa8", b"\\u2028").replace(
            b"\xe2\x80\xa9", b"\\u2029"
        )
    return rendered


class AlwaysJson(BaseContentNegotiation):
    """Every API response is JSON, whatever the ``Accept`` header asks for."""

    def select_parser(self, request: Any, parsers: Any) -> Any:
        for parser in parsers:
            accepts = getattr(parser, "accepts", None)
            if accepts is not None and accepts(request.content_type):
                return parser
        return None

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type
