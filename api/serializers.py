"""Serializer building blocks shared by every API app."""

import threading
from typing import Any

from rest_framework import serializers


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


# Shared fields only: each app subclasses these under its own name, which stays the name of its
# OpenAPI component. No docstrings: the schema would publish them as the components' descriptions.
class CarrierFields(serializers.Serializer):
    name = serializers.CharField()
    service = serializers.CharField()


class FulfillmentLocationFields(serializers.Serializer):
    countryCode = serializers.CharField()
    labCode = serializers.CharField()


class JsonIntegerField(serializers.IntegerField):
    """An integer given as a JSON integer: ``"1"``, ``1.0`` or ``true`` are refused, as are
    digits of other scripts that ``int()`` would read."""

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return int(super().to_internal_value(data))
