"""Serializer building blocks shared by every API app."""

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
