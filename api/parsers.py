import json
import math
import re
from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# U+0000 (PostgreSQL text and jsonb cannot hold it) and UTF-16 surrogates, which Python's
# ``json`` lets through as lone ``\ud800`` escapes but no UTF-8 text can carry.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _reject_unstorable(value: Any) -> None:
    """Every string of the body, keys included, is valid Unicode without U+0000."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            raise ValueError("strings must be valid Unicode without U+0000 or lone surrogates")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _reject_unstorable(key)
            _reject_unstorable(item)
    elif isinstance(value, list):
        for item in value:
            _reject_unstorable(item)


_UNPARSED = object()


# 19 digits in a row may be an integer beyond 64 bits, which orjson reads as a float.
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _fast(body: bytes) -> Any:
    """The body parsed by orjson, or ``_UNPARSED`` for anything it refuses (invalid JSON, NaN,
    infinities, lone surrogates) or might read otherwise (long numbers): those are parsed by
    ``json`` as before, which accepts or refuses them with its own message."""
    if _LONG_NUMBER.search(body):
        return _UNPARSED
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return _UNPARSED


class JsonBodyParser(JSONParser):
    """JSON bodies under every media type the specification declares for requests.

    Strict: no NaN or Infinity, no number too large for a double, no U+0000 or lone surrogate,
    and nesting
    deep enough to exhaust the parser is malformed JSON (400), never a server error.
    """

    media_type = "application/json"
    accepted_media_types = ("application/json", "text/json", "application/json-patch+json")

    @staticmethod
    def accepts(content_type: str) -> bool:
        base = content_type.split(";", 1)[0].strip().lower()
        return base in JsonBodyParser.accepted_media_types or (
            base.startswith("application/") and base.endswith("+json")
        )

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            body = stream.read()
            data = _fast(body) if encoding.lower() in ("utf-8", "utf8") else _UNPARSED
            if data is _UNPARSED:
                text = body.decode(encoding)
                data = json.loads(text, parse_float=_finite, parse_constant=_no_constants)
            _reject_unstorable(data)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        return data
