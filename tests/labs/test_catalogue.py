"""The catalogue snapshot: reused while the catalogue version stands, never a stale price."""

from decimal import Decimal
from typing import Any

import pytest
import requests
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from labs.catalogue import CatalogueCache, catalogue_snapshot
from labs.models import LabProduct, ShippingRate
from merchants.services import CreatedMerchant
from orders.models import Order
from orders.pipeline.steps.allocate import order_plan
from products.models import Product
from products.selectors import catalogue_version
from tests.support.orders import order_create_via_api, pk
from tests.support.web import gunicorn_serving, needs_shared_database

pytestmark = pytest.mark.django_db

FAP = {
    "sku": "GLOBAL-FAP-10X10",
    "copies": 1,
    "assets": [{"printArea": "default", "url": "https://images.example.com/fap.jpg"}],
}


QUOTE = {
    "destinationCountryCode": "GB",
    "shippingMethod": "Standard",
    "items": [{"sku": "GLOBAL-FAP-10X10", "copies": 1, "assets": [{"printArea": "default"}]}],
}


def unit_cost_quoted(api: APIClient) -> str:
    response = api.post("/v4.0/quotes", QUOTE, format="json")
    assert response.status_code == 200, response.content
    return str(response.json()["quotes"][0]["items"][0]["unitCost"]["amount"])


def admin_change(client: Client, row: Any, **changes: Any) -> None:
    """Post the row's admin change form with ``changes``, as staff saving the page do."""
    opts = row._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
    form = client.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {name: value for name, value in data.items() if value is not None}
    for name, value in changes.items():
        if value is False:
            data.pop(name, None)
        else:
            data[name] = value
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors


def gb1_fap() -> LabProduct:
    return LabProduct.objects.get(lab__code="gb1", product__sku="GLOBAL-FAP-10X10")


def test_every_catalogue_write_changes_the_version(catalogue: None) -> None:
    before = catalogue_version()
    LabProduct.objects.filter(pk=gb1_fap().pk).update(unit_cost=Decimal("9.99"))
    after_update = catalogue_version()
    Product.objects.filter(sku="GLOBAL-FAP-10X10").update(description="Renamed")
    after_product = catalogue_version()

    assert len({before, after_update, after_product}) == 3


def test_the_snapshot_is_reused_while_the_version_stands(
    catalogue: None, django_assert_num_queries: Any
) -> None:
    first = catalogue_snapshot()

    with django_assert_num_queries(1):  # the version only
        again = catalogue_snapshot()

    assert again is first
    assert "GLOBAL-FAP-10X10" in first.products


def test_a_price_changed_in_the_admin_is_used_by_the_next_quote_and_order(
    catalogue: None, admin_client: Client, sandbox_api: APIClient
) -> None:
    other_process = CatalogueCache()  # another process's snapshot, loaded before the change
    other_process.get()
    before = unit_cost_quoted(sandbox_api)
    order = Order.objects.get(id=pk(order_create_via_api(sandbox_api, items=[FAP])))
    lab_product = gb1_fap()
    assert order_plan(order).item_lines[0].unit_cost == Decimal(before)

    admin_change(admin_client, lab_product, unit_cost=str(lab_product.unit_cost + 5))

    after = Decimal(before) + 5
    assert unit_cost_quoted(sandbox_api) == str(after)
    assert order_plan(order).item_lines[0].unit_cost == after
    assert [
        lp.unit_cost
        for lp in other_process.get().lab_products[lab_product.product_id]
        if lp.pk == lab_product.pk
    ] == [lab_product.unit_cost + 5]


def test_the_rates_to_a_country_kept_with_a_snapshot_follow_a_rate_change(
    catalogue: None, sandbox_api: APIClient
) -> None:
    def shipping_quoted() -> tuple[str, str]:
        response = sandbox_api.post("/v4.0/quotes", QUOTE, format="json")
        assert response.status_code == 200, response.content
        [shipment] = response.json()["quotes"][0]["shipments"]
        return shipment["fulfillmentLocation"]["labCode"], shipment["cost"]["amount"]

    lab_code, before = shipping_quoted()
    assert shipping_quoted() == (lab_code, before)  # from the rates kept with the snapshot
    ShippingRate.objects.filter(lab__code=lab_code, method="Standard").update(price=Decimal(0))

    assert before != "0.00"
    assert shipping_quoted() == (lab_code, "0.00")


def test_a_product_out_of_stock_in_the_admin_is_unavailable_to_the_next_order(
    catalogue: None, admin_client: Client, sandbox_api: APIClient
) -> None:
    order_create_via_api(sandbox_api, items=[FAP])
    for lab_product in LabProduct.objects.filter(product__sku="GLOBAL-FAP-10X10"):
        admin_change(admin_client, lab_product, in_stock=False)

    order_create_via_api(sandbox_api, items=[FAP], outcome="CreatedWithIssues")


def test_a_catalogue_reload_is_seen_by_the_next_quote(
    catalogue: None, sandbox_api: APIClient
) -> None:
    before = unit_cost_quoted(sandbox_api)
    LabProduct.objects.filter(product__sku="GLOBAL-FAP-10X10").update(unit_cost=Decimal("1.00"))
    assert unit_cost_quoted(sandbox_api) != before

    call_command("load_catalogue", verbosity=0)

    assert unit_cost_quoted(sandbox_api) == before


@needs_shared_database
@pytest.mark.django_db(transaction=True)
def test_a_price_changed_in_the_admin_is_quoted_at_once_by_a_running_server(
    catalogue: None, admin_client: Client, merchant: CreatedMerchant
) -> None:
    # A real gunicorn process whose snapshot is warm when the price changes in this one.
    with gunicorn_serving(workers=1) as web, requests.Session() as session:
        session.headers["X-API-Key"] = merchant.sandbox_api_key

        def quoted() -> str:
            response = session.post(f"{web.url}/v4.0/quotes", json=QUOTE, timeout=30)
            assert response.status_code == 200, response.text
            return str(response.json()["quotes"][0]["items"][0]["unitCost"]["amount"])

        before = quoted()
        assert quoted() == before  # served from the snapshot now
        lab_product = gb1_fap()
        admin_change(admin_client, lab_product, unit_cost=str(lab_product.unit_cost + 5))

        assert quoted() == str(Decimal(before) + 5)
