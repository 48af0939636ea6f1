from collections.abc import Mapping
from typing import Any

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
        return super().render(data, accepted_media_type, renderer_context)


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
