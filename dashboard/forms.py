"""The dashboard's forms. A held order's changes are checked by the order API's own
input fields (``orders.inputs``) and then by ``order_validate``, so the dashboard and
the API refuse the same values with the same messages."""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.password_validation import (
    password_validators_help_text_html,
    validate_password,
)

from api.exceptions import flatten_failures
from api.serializers import StrictSerializer
from common.countries import country_label
from common.http import url_refusal
from common.shipping import ShippingMethod
from labs.selectors import countries_shipped_to, currencies_supported
from merchants.models import PauseMode
from orders.inputs import (
    ItemInput,
    MetadataField,
    RecipientInput,
    ShippingMethodField,
)
from orders.models import Order, OrderItem


class SignupForm(forms.Form):
    name = forms.CharField(label="Business name", max_length=200)
    email = forms.EmailField(label="Email address")
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(
            attrs={"autocomplete": "new-password", "aria-describedby": "id_password_help"}
        ),
        # The rules of AUTH_PASSWORD_VALIDATORS, as ``validate_password`` applies them below.
        help_text=password_validators_help_text_html(),
    )

    def clean_email(self) -> str:
        # An address that has an account is not refused here (its owner is mailed instead,
        # ``registration_signup``): the form must not tell who has an account.
        return str(self.cleaned_data["email"]).strip().lower()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        password = cleaned.get("password")
        if password:
            user = get_user_model()(
                username=cleaned.get("email", ""),
                email=cleaned.get("email", ""),
                first_name=cleaned.get("name", ""),
            )
            try:
                validate_password(password, user)
            except forms.ValidationError as error:
                self.add_error("password", error)
        return cleaned


class LoginForm(AuthenticationForm):
    username = forms.CharField(
        label="Email address", widget=forms.EmailInput(attrs={"autofocus": True})
    )
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "That email address and password do not match an account. "
        "Check both (the password is case-sensitive), or reset your password.",
    }


class ApiKeyForm(forms.Form):
    name = forms.CharField(label="Key name", max_length=100, required=False)


class SettingsForm(forms.Form):
    callback_url = forms.URLField(
        label="Callback URL",
        required=False,
        max_length=2000,
        assume_scheme="https",
        help_text="Where order callbacks go when an order names none.",
    )
    pause_mode = forms.ChoiceField(
        label="Pause window", choices=PauseMode.choices, widget=forms.RadioSelect
    )
    pause_minutes = forms.IntegerField(
        label="Minutes to hold each order", min_value=0, max_value=7 * 24 * 60, required=False
    )
    billing_currency = forms.ChoiceField(label="Billing currency")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        currencies = sorted(currencies_supported()) or ["GBP"]
        field = self.fields["billing_currency"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(c, c) for c in currencies]

    def clean_callback_url(self) -> str:
        url = str(self.cleaned_data.get("callback_url") or "")
        if url and not url.lower().startswith(("http://", "https://")):
            raise forms.ValidationError("Enter an absolute http or https URL.")
        if url and url_refusal(url) is not None:
            raise forms.ValidationError("Enter a valid http or https URL (with a host and port).")
        return url

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("pause_mode") == PauseMode.MINUTES and not cleaned.get("pause_minutes"):
            self.add_error("pause_minutes", "Give the number of minutes (at least 1).")
        return cleaned


# --- held orders ----------------------------------------------------------------------------

RECIPIENT_FORM_FIELDS: dict[str, tuple[str, str]] = {
    # form field: (path in the order request, label)
    "name": ("recipient.name", "Recipient name"),
    "email": ("recipient.email", "Email"),
    "phone_number": ("recipient.phoneNumber", "Phone number"),
    "line1": ("recipient.address.line1", "Address line 1"),
    "line2": ("recipient.address.line2", "Address line 2"),
    "postal_or_zip_code": ("recipient.address.postalOrZipCode", "Postal or ZIP code"),
    "country_code": ("recipient.address.countryCode", "Country"),
    "town_or_city": ("recipient.address.townOrCity", "Town or city"),
    "state_or_county": ("recipient.address.stateOrCounty", "State or county"),
}
OPTIONAL = {"email", "phone_number", "line2", "state_or_county"}


class CopiesInput(ItemInput):
    """An order item with only its copies: the other fields of ``ItemInput`` removed."""

    omsId = None  # type: ignore[assignment]
    merchantReference = None  # type: ignore[assignment]
    sku = None  # type: ignore[assignment]
    sizing = None  # type: ignore[assignment]
    attributes = None  # type: ignore[assignment]
    spine = None  # type: ignore[assignment]
    assets = None  # type: ignore[assignment]
    recipientCost = None  # type: ignore[assignment]


class HeldOrderInput(StrictSerializer):
    """The editable part of an order, shaped and checked as in ``POST /v4.0/orders``."""

    shippingMethod = ShippingMethodField()
    recipient = RecipientInput()
    items = CopiesInput(many=True)
    metadata = MetadataField()


def _initial(order: Order) -> dict[str, Any]:
    return {
        "name": order.recipient_name,
        "email": order.recipient_email,
        "phone_number": order.recipient_phone,
        "line1": order.address_line1,
        "line2": order.address_line2,
        "postal_or_zip_code": order.address_postal_or_zip_code,
        "country_code": order.address_country_code,
        "town_or_city": order.address_town_or_city,
        "state_or_county": order.address_state_or_county,
        "shipping_method": order.shipping_method,
        "metadata": json.dumps(order.metadata, indent=2, ensure_ascii=False),
    }


class HeldOrderForm(forms.Form):
    """Recipient, shipping method, copies per item and metadata of a held order."""

    shipping_method = forms.ChoiceField(label="Shipping method", choices=ShippingMethod.choices)
    metadata = forms.CharField(
        label="Metadata (a JSON object)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
    )

    def __init__(self, *args: Any, order: Order, items: Sequence[OrderItem], **kwargs: Any):
        kwargs.setdefault("initial", {**_initial(order), **_copies_initial(items)})
        super().__init__(*args, **kwargs)
        self.items = list(items)
        for name, (_, label) in reversed(list(RECIPIENT_FORM_FIELDS.items())):
            field: forms.Field = forms.CharField(label=label, required=name not in OPTIONAL)
            if name == "country_code":
                field = _country_field(label, current=order.address_country_code)
            self.fields = {name: field, **self.fields}
        for index, item in enumerate(self.items):
            self.fields[f"copies_{index}"] = forms.IntegerField(
                label=f"Copies of {item.sku} (item {index + 1})"
            )
        self.request_data: dict[str, Any] = {}

    def copies_fields(self) -> list[forms.BoundField]:
        return [self[f"copies_{i}"] for i in range(len(self.items))]

    def recipient_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in RECIPIENT_FORM_FIELDS]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            metadata = json.loads(cleaned.get("metadata") or "{}")
        except json.JSONDecodeError:
            self.add_error("metadata", "Metadata must be valid JSON.")
            return cleaned
        address = {
            key: cleaned.get(name) or None
            for name, (path, _) in RECIPIENT_FORM_FIELDS.items()
            if path.startswith("recipient.address.")
            for key in [path.rsplit(".", 1)[1]]
        }
        recipient = {
            "name": cleaned.get("name"),
            "email": cleaned.get("email") or None,
            "phoneNumber": cleaned.get("phone_number") or None,
            "address": address,
        }
        data = {
            "shippingMethod": cleaned.get("shipping_method"),
            "recipient": recipient,
            "items": [{"copies": cleaned.get(f"copies_{i}")} for i in range(len(self.items))],
            "metadata": metadata,
        }
        serializer = HeldOrderInput(data=data)
        if not serializer.is_valid():
            self.add_failures(
                {
                    path: [(item["code"], item["description"]) for item in items]
                    for path, items in flatten_failures(serializer.errors).items()
                }
            )
            return cleaned
        self.request_data = dict(serializer.validated_data)
        return cleaned

    def field_for(self, path: str) -> str | None:
        """The form field showing the failure at ``path`` (a request path), if any."""
        for name, (field_path, _) in RECIPIENT_FORM_FIELDS.items():
            if path == field_path or path == field_path.removeprefix("recipient."):
                return name
        if path.startswith("shippingMethod"):
            return "shipping_method"
        if path.startswith("metadata"):
            return "metadata"
        if path.startswith("items["):
            index = path[len("items[") :].split("]", 1)[0]
            if index.isdigit() and int(index) < len(self.items):
                return f"copies_{index}"
        return None

    def add_failures(self, failures: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        for path, items in failures.items():
            field = self.field_for(path)
            for _, description in items:
                self.add_error(field, description)


def _country_field(label: str, *, current: str) -> forms.ChoiceField:
    """A select of the countries the catalogue ships to (the order's own kept in it)."""
    countries = countries_shipped_to()
    if current and current not in countries:
        countries = sorted([*countries, current])
    return forms.ChoiceField(label=label, choices=[(c, country_label(c)) for c in countries])


def _copies_initial(items: Sequence[OrderItem]) -> dict[str, int]:
    return {f"copies_{i}": item.copies for i, item in enumerate(items)}
