"""The admin's form for a new merchant: what the API and the dashboard would accept."""

from typing import Any

from django import forms

from labs.selectors import currencies_supported
from merchants.models import Merchant


class MerchantAddForm(forms.ModelForm):
    """A new merchant: its name, contact email, billing currency (one the service prices in,
    as the dashboard offers), billing mode and, optionally, its owner (never a staff account:
    ``Merchant.user``'s choices). Its environments and first keys are made on save
    (``merchants.services.merchant_create``)."""

    billing_currency = forms.ChoiceField(
        label="Billing currency", help_text="A currency the service prices orders in."
    )

    class Meta:
        model = Merchant
        fields = ("name", "email", "billing_currency", "billing_mode", "user")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["billing_currency"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(c, c) for c in sorted(currencies_supported()) or ["GBP"]]
        field.initial = "GBP"
