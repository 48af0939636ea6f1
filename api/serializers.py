"""Serializer building blocks shared by every API app."""

import threading
from collections.abc import Sequence
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

OK_OUTCOMES = ("Ok",)  # the outcome of a read
TRACE_PARENT_EXAMPLE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class StrictSerializer(serializers.Serializer):
    """An input serializer that refuses fields it does not declare, naming each one.

    Nested ``StrictSerializer`` fields refuse theirs too, so the failure path is exact
    (``recipient.address.flat``).
    """

    default_error_messages = {"unknown_field": "Unknown field."}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            errors: dict[str, Any] = {}
            if unknown:
                errors = {
                    name: [serializers.ErrorDetail("Unknown field.", code="unknown_field")]
                    for name in unknown
                }
            try:
                value = super().to_internal_value(data)
            except serializers.ValidationError as exc:
                if not errors:
                    raise
                detail = (
                    exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
                )
                raise serializers.ValidationError({**detail, **errors}) from exc
            if errors:
                raise serializers.ValidationError(errors)
            return value
        return super().to_internal_value(data)


# Each thread's fields of each KeptFieldsSerializer class, made once.
_kept_fields = threading.local()


class KeptFieldsSerializer(StrictSerializer):
    # A StrictSerializer of a request body whose fields are made once per thread and kept.
    # DRF deep-copies a serializer's declared fields for every instance (so that an instance
    # may change its own): with nested lists of nested serializers, most of the CPU of
    # validating a body. For a serializer whose fields nothing changes, created without
    # ``partial``, and whose fields do not read the context (its own ``validate_<field>``
    # methods may: they run on the instance); a thread validates one body at a time. No
    # docstring: the schema would publish it as its subclasses' descriptions.

    @property
    def fields(self) -> Any:
        kept: dict[type, Any] = getattr(_kept_fields, "by_class", None) or {}
        _kept_fields.by_class = kept
        fields = kept.get(type(self))
        if fields is None:
            fields = kept[type(self)] = super().fields
        return fields


@extend_schema_field({"type": "string", "example": TRACE_PARENT_EXAMPLE})
class TraceParentField(serializers.CharField):
    """The ``traceParent`` every JSON answer carries (``api.renderers``), described once."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "help_text",
            "The W3C trace context of this request, also sent as the `traceParent` header: "
            "quote it when you ask about a request.",
        )
        super().__init__(**kwargs)


class OutcomeField(serializers.ChoiceField):
    """An answer's ``outcome``: the values it can take, listed in the document."""

    def __init__(self, values: Sequence[str], help_text: str, **kwargs: Any) -> None:
        super().__init__(choices=list(values), help_text=help_text, **kwargs)


# Shared fields only: each app subclasses these under its own name, which stays the name of its
# OpenAPI component. No docstrings: the schema would publish them as the components' descriptions.
class CarrierFields(serializers.Serializer):
    name = serializers.CharField(help_text="The carrier, e.g. `Royal Mail`.")
    service = serializers.CharField(help_text="The carrier's service, e.g. `Tracked 48`.")


class FulfillmentLocationFields(serializers.Serializer):
    countryCode = serializers.CharField(
        help_text="The two-letter ISO country code of the lab that makes the shipment."
    )
    labCode = serializers.CharField(help_text="The code of that lab, e.g. `gb1`.")


class JsonIntegerField(serializers.IntegerField):
    """An integer given as a JSON integer: ``"1"``, ``1.0`` or ``true`` are refused, as are
    digits of other scripts that ``int()`` would read."""

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return int(super().to_internal_value(data))
