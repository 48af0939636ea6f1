"""The catalogue in the admin (decisions.md, "Staff, wave 4"): an administrator who is not a
superuser adds and changes labs (capabilities as checkboxes), lab products (lab SKU, variant
codes, stock, prices), shipping zones and rates, exchange rates and merchants, each add form
refusing what the API would; an operator views them and is refused every change with the
admin's 403 page, nothing saved."""

from typing import Any

import pytest
from django.db import models
from django.test import Client

from labs.models import ExchangeRate, Lab, LabProduct, ShippingRate, ShippingZone
from merchants.models import ApiKey, Environment, Merchant
from merchants.services import STAFF_ISSUED_KEY_NAME
from products.models import CatalogueVersion, Product
from staff.models import AuditEntry
from staff.services import staff_user_save
from tests.support.catalogue_admin import (
    lab_form,
    lab_product_form,
    shipping_rate_form,
)
from tests.support.staff import signed_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


@pytest.fixture
def operator() -> Client:
    return signed_in(staff_user_save(username="olga")[0])


@pytest.fixture
def administrator() -> Client:
    user, _ = staff_user_save(username="ada", administrator=True)
    assert not user.is_superuser
    return signed_in(user)


def catalogue_version() -> int:
    return CatalogueVersion.objects.get().number


def assert_refused(response: Any) -> None:
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")
    assert 'id="refusal"' in response.content.decode()


def errors(response: Any) -> str:
    """The add page shown again, and its error list."""
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="errorlist' in html, html[:3000]
    return html


# --- labs -----------------------------------------------------------------------------------


def test_the_lab_add_page_offers_every_capability_as_a_checkbox(administrator: Client) -> None:
    html = administrator.get("/admin/labs/lab/add/").content.decode()

    for name in ("cancel", "hold", "unhold", "updateAddress", "updateShippingMethod"):
        assert f'type="checkbox" name="capabilities" value="{name}"' in html
    assert "('cancel'" not in html  # no Python tuple for a hint
    assert 'name="siteflow_secret"' in html and 'type="password"' in html


def test_an_administrator_adds_a_lab_with_capabilities_ticked(administrator: Client) -> None:
    before = catalogue_version()

    response = administrator.post(
        "/admin/labs/lab/add/",
        {**lab_form("gb7", capabilities=("updateAddress", "cancel")), "_continue": "1"},
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    lab = Lab.objects.get(code="gb7")
    assert response["Location"] == f"/admin/labs/lab/{lab.pk}/change/"
    assert (lab.name, lab.country_code, lab.currency, lab.connector, lab.is_active) == (
        "Lab gb7", "GB", "GBP", "simulator", True
    )  # fmt: skip
    assert lab.capabilities == ["cancel", "updateAddress"]  # in the vocabulary's order
    assert catalogue_version() != before  # running processes renew their catalogue
    change_page = administrator.get(response["Location"]).content.decode()
    assert 'value="cancel" id="id_capabilities_0" checked' in change_page
    assert 'value="hold" id="id_capabilities_1" checked' not in change_page


def test_unticking_every_capability_of_a_simulator_lab_saves_none(administrator: Client) -> None:
    administrator.post("/admin/labs/lab/add/", lab_form("gb7"))
    lab = Lab.objects.get(code="gb7")
    form = lab_form("gb7")
    del form["capabilities"]

    response = administrator.post(f"/admin/labs/lab/{lab.pk}/change/", form)

    assert response.status_code == 302
    lab.refresh_from_db()
    assert lab.capabilities == []


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"capabilities": ["cancel", "teleport"]}, "capabilities"),
        ({"currency": "gbp"}, "currency"),
        ({"currency": "GB"}, "currency"),
        ({"country_code": "XX"}, "country_code"),
        ({"country_code": "gb"}, "country_code"),
        ({"code": "GB7"}, "code"),
        ({"connector": "siteflow"}, "siteflow_base_url"),  # without its base URL, token, secret
    ],
)
def test_a_lab_the_api_would_refuse_is_not_added(
    administrator: Client, changes: dict[str, Any], field: str
) -> None:
    before = catalogue_version()

    html = errors(administrator.post("/admin/labs/lab/add/", {**lab_form("gb7"), **changes}))

    assert f'id="id_{field}_error"' in html
    assert not Lab.objects.filter(code__iexact="gb7").exists()
    assert catalogue_version() == before


# --- lab products, shipping zones and rates, exchange rates -------------------------------------


def test_an_administrator_adds_a_lab_product_with_variant_codes(administrator: Client) -> None:
    lab = Lab.objects.get(code="gb1")
    product = Product.objects.get(sku="GLOBAL-CAN-10X10")
    lab.products.filter(product=product).delete()
    page = administrator.get("/admin/labs/labproduct/add/").content.decode()
    assert f'<option value="{product.pk}">GLOBAL-CAN-10X10</option>' in page  # a plain list

    response = administrator.post(
        "/admin/labs/labproduct/add/", lab_product_form(lab.pk, product.pk)
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    made = LabProduct.objects.get(lab=lab, product=product)
    assert (made.lab_sku, made.unit_cost, made.in_stock) == ("ADM-CAN-10", 7.5, True)
    assert made.variant_codes == {"wrap=ImageWrap": "ADM-CAN-10-IW", "wrap=Black": "ADM-CAN-10-BK"}


@pytest.mark.parametrize(
    "changes",
    [
        {"variant_codes": '{"wrap": "ADM-CAN-10-IW"}'},  # not name=value
        {"variant_codes": '{"wrap=Black": ""}'},
        {"variant_codes": '["ADM"]'},
        {"unit_cost": "-1"},
    ],
)
def test_a_lab_product_with_bad_codes_or_price_is_not_added(
    administrator: Client, changes: dict[str, str]
) -> None:
    lab = Lab.objects.get(code="gb1")
    product = Product.objects.get(sku="GLOBAL-CAN-10X10")
    lab.products.filter(product=product).delete()

    errors(
        administrator.post(
            "/admin/labs/labproduct/add/", lab_product_form(lab.pk, product.pk, **changes)
        )
    )

    assert not LabProduct.objects.filter(lab=lab, product=product).exists()


def test_an_administrator_changes_a_lab_products_stock_code_and_price(
    administrator: Client,
) -> None:
    made = LabProduct.objects.get(lab__code="gb1", product__sku="GLOBAL-CAN-10X10")
    form = lab_product_form(made.lab_id, made.product_id, unit_cost="9.10", lab_sku="NEW-CODE")
    del form["in_stock"]

    response = administrator.post(f"/admin/labs/labproduct/{made.pk}/change/", form)

    assert response.status_code == 302, response.content.decode()[:3000]
    made.refresh_from_db()
    assert (made.lab_sku, str(made.unit_cost), made.in_stock) == ("NEW-CODE", "9.10", False)


def test_an_administrator_adds_a_shipping_zone_of_typed_country_codes(
    administrator: Client,
) -> None:
    response = administrator.post(
        "/admin/labs/shippingzone/add/",
        {"code": "ALPS", "name": "Alpine", "countries": "ch, AT,li  DE, at", "_continue": "1"},
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    zone = ShippingZone.objects.get(code="ALPS")
    assert (zone.countries, zone.rest_of_world) == (["CH", "AT", "LI", "DE"], False)
    change_page = administrator.get(response["Location"]).content.decode()
    assert "CH, AT, LI, DE</textarea>" in change_page


@pytest.mark.parametrize("typed", ["CH, XX", "CH, UK", "C\u0397", '["CH"]'])
def test_a_zone_with_a_code_that_is_no_country_is_not_added(
    administrator: Client, typed: str
) -> None:
    html = errors(
        administrator.post(
            "/admin/labs/shippingzone/add/", {"code": "ALPS", "name": "Alpine", "countries": typed}
        )
    )

    assert "Not ISO 3166-1 alpha-2 country codes" in html
    assert not ShippingZone.objects.filter(code="ALPS").exists()


def test_an_administrator_adds_shipping_rates_by_country_and_by_zone(
    administrator: Client,
) -> None:
    lab = Lab.objects.get(code="gb1")
    zone = ShippingZone.objects.get(code="EU")
    ShippingRate.objects.filter(lab=lab, method="Overnight").delete()

    by_country = administrator.post(
        "/admin/labs/shippingrate/add/", shipping_rate_form(lab.pk, method="Overnight")
    )
    by_zone = administrator.post(
        "/admin/labs/shippingrate/add/",
        shipping_rate_form(lab.pk, method="Overnight", country_code="", zone=str(zone.pk)),
    )
    both = administrator.post(
        "/admin/labs/shippingrate/add/",
        shipping_rate_form(lab.pk, method="Overnight", zone=str(zone.pk), country_code="FR"),
    )

    assert (by_country.status_code, by_zone.status_code) == (302, 302)
    assert "Give either a country or a zone." in errors(both)
    assert sorted(
        ShippingRate.objects.filter(lab=lab, method="Overnight").values_list(
            "country_code", "zone__code"
        ),
        key=str,
    ) == [("", "EU"), ("GB", None)]


def test_an_administrator_adds_and_changes_an_exchange_rate(administrator: Client) -> None:
    ExchangeRate.objects.filter(currency="CHF").delete()

    added = administrator.post(
        "/admin/labs/exchangerate/add/", {"currency": "CHF", "units_per_base": "1.12"}
    )
    refused = errors(
        administrator.post(
            "/admin/labs/exchangerate/add/", {"currency": "chf", "units_per_base": "1.12"}
        )
    )
    rate = ExchangeRate.objects.get(currency="CHF")
    changed = administrator.post(
        f"/admin/labs/exchangerate/{rate.pk}/change/",
        {"currency": "CHF", "units_per_base": "1.15"},
    )

    assert (added.status_code, changed.status_code) == (302, 302)
    assert "ISO 4217" in refused
    rate.refresh_from_db()
    assert str(rate.units_per_base) == "1.150000"
    assert ExchangeRate.objects.filter(currency__iexact="chf").count() == 1


# --- operators ------------------------------------------------------------------------------

CATALOGUE_MODELS: list[type[models.Model]] = [
    Lab, LabProduct, ShippingZone, ShippingRate, ExchangeRate
]  # fmt: skip


@pytest.mark.parametrize("model_class", CATALOGUE_MODELS)
def test_an_operator_views_the_catalogue_read_only(
    operator: Client, model_class: type[models.Model]
) -> None:
    model = model_class._meta.model_name
    listed = operator.get(f"/admin/labs/{model}/")
    first = model_class._default_manager.order_by("pk")[0]
    viewed = operator.get(f"/admin/labs/{model}/{first.pk}/change/")

    assert listed.status_code == 200
    assert f'href="/admin/labs/{model}/add/"' not in listed.content.decode()
    assert viewed.status_code == 200
    assert 'name="_save"' not in viewed.content.decode()
    assert_refused(operator.get(f"/admin/labs/{model}/add/"))


def test_an_operator_is_refused_every_catalogue_write_and_nothing_changes(
    operator: Client,
) -> None:
    lab = Lab.objects.get(code="gb1")
    product = Product.objects.get(sku="GLOBAL-CAN-10X10")
    made = LabProduct.objects.get(lab=lab, product=product)
    before = catalogue_version()

    assert_refused(operator.post("/admin/labs/lab/add/", lab_form("gb7")))
    assert_refused(
        operator.post(
            f"/admin/labs/labproduct/{made.pk}/change/",
            lab_product_form(lab.pk, product.pk, unit_cost="0.01"),
        )
    )
    assert_refused(operator.post("/admin/labs/shippingrate/add/", shipping_rate_form(lab.pk)))
    assert_refused(operator.post("/admin/labs/shippingzone/add/", {"code": "ALPS", "name": "A"}))
    assert_refused(
        operator.post("/admin/labs/exchangerate/add/", {"currency": "CHF", "units_per_base": "1"})
    )

    assert not Lab.objects.filter(code="gb7").exists()
    made.refresh_from_db()
    assert made.unit_cost != 0.01 and made.lab_sku == ""
    assert not ShippingZone.objects.filter(code="ALPS").exists()
    assert catalogue_version() == before


# --- merchants ------------------------------------------------------------------------------


def test_an_administrator_adds_a_merchant_with_its_environments_and_keys(
    administrator: Client,
) -> None:
    owner = staff_user_save(username="not-an-owner")[0]
    page = administrator.get("/admin/merchants/merchant/add/").content.decode()
    assert f'<option value="{owner.pk}">' not in page  # a staff account is never an owner
    assert '<option value="EUR">EUR</option>' in page

    response = administrator.post(
        "/admin/merchants/merchant/add/",
        {
            "name": "Bramble Prints",
            "email": "hello@bramble.test",
            "billing_currency": "EUR",
            "billing_mode": "Card",
            "user": "",
        },
        follow=True,
    )

    assert response.status_code == 200
    merchant = Merchant.objects.get(name="Bramble Prints")
    assert (merchant.email, merchant.billing_currency, merchant.billing_mode, merchant.user) == (
        "hello@bramble.test", "EUR", "Card", None
    )  # fmt: skip
    environments = Environment.objects.filter(merchant=merchant)
    assert sorted(environments.values_list("kind", flat=True)) == ["Live", "Sandbox"]
    assert all(e.callback_signing_secret.startswith("whsec_") for e in environments)
    keys = ApiKey.objects.filter(environment__merchant=merchant)
    assert sorted(keys.values_list("name", flat=True)) == [STAFF_ISSUED_KEY_NAME] * 2
    shown = response.content.decode()
    for key in keys:
        assert f"New key for {key.environment}: {key.prefix}" in shown
    assert (
        AuditEntry.objects.filter(operation="environment.apiKey.issue", username="ada").count() == 2
    )


@pytest.mark.parametrize("currency", ["XYZ", "eur", "ÉUR"])
def test_a_merchant_billed_in_a_currency_the_service_does_not_price_in_is_not_added(
    administrator: Client, currency: str
) -> None:
    errors(
        administrator.post(
            "/admin/merchants/merchant/add/",
            {"name": "Bramble Prints", "billing_currency": currency, "billing_mode": "Card"},
        )
    )

    assert not Merchant.objects.filter(name="Bramble Prints").exists()


def test_an_operator_cannot_add_a_merchant(operator: Client) -> None:
    assert_refused(operator.get("/admin/merchants/merchant/add/"))
    assert_refused(
        operator.post(
            "/admin/merchants/merchant/add/",
            {"name": "Bramble Prints", "billing_currency": "GBP", "billing_mode": "Card"},
        )
    )
    assert not Merchant.objects.filter(name="Bramble Prints").exists()
