"""A lab's own product codes per variant: attribute values mapped to codes.

A lab product's ``variant_codes`` is an object from a condition to the lab's code, e.g.
``{"wrap=ImageWrap": "CAN-10X10-IW", "wrap=Black": "CAN-10X10-BK",
"color=Black,mount=Yes": "FRM-BK-M"}``. A condition is one or more ``name=value`` pairs joined
by commas; it matches an item whose canonical attributes (defaults filled in) hold every pair
(names and values compared without regard to letter case). The matching condition with the
most pairs wins (the first written among equals); without a match the lab product's code
applies, else the SKU (``decisions.md``, "What a lab receives").
"""

from collections.abc import Mapping

from django.core.exceptions import ValidationError


def conditions_parse(key: str) -> dict[str, str]:
    """``"wrap=ImageWrap,color=Black"`` as ``{"wrap": "ImageWrap", "color": "Black"}``;
    raises ``ValueError`` for a malformed condition."""
    pairs: dict[str, str] = {}
    for part in key.split(","):
        name, equals, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name or not value:
            raise ValueError(f"'{part.strip()}' is not name=value.")
        if name.lower() in (n.lower() for n in pairs):
            raise ValueError(f"'{name}' is named twice.")
        pairs[name] = value
    return pairs


def validate_variant_codes(value: object) -> None:
    if not isinstance(value, dict):
        raise ValidationError('An object from "name=value[,name=value]" to the lab\'s code.')
    for key, code in value.items():
        try:
            conditions_parse(str(key))
        except ValueError as exc:
            raise ValidationError(f"Condition '{key}': {exc}") from exc
        if not isinstance(code, str) or not code.strip():
            raise ValidationError(f"Condition '{key}' needs the lab's code as a string.")


def variant_code(codes: Mapping[str, str], attributes: Mapping[str, str]) -> str | None:
    """The lab's code for a variant with these canonical ``attributes``, or None."""
    held = {name.lower(): str(value).lower() for name, value in attributes.items()}
    best: tuple[int, str] | None = None
    for key, code in codes.items():
        conditions = conditions_parse(key)
        matches = all(held.get(n.lower()) == v.lower() for n, v in conditions.items())
        if matches and (best is None or len(conditions) > best[0]):
            best = (len(conditions), code)
    return best[1] if best is not None else None
