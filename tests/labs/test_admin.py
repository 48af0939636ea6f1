"""Staff can browse and edit the catalogue and labs in the admin."""

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from labs.models import Lab
from products.models import Product
from tests.support.admin_forms import admin_change_post

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "products_product",
    "products_paper",
    "labs_lab",
    "labs_labproduct",
    "labs_shippingzone",
    "labs_shippingrate",
    "labs_exchangerate",
    "labs_taxrule",
]

FULL_WIDTH_GBP = "\uff27\uff22\uff30"  # GBP in full-width letters


@pytest.mark.parametrize("name", CHANGELISTS)
def test_every_changelist_renders_with_search(admin_client: Client, name: str) -> None:
    call_command("load_catalogue", verbosity=0)

    assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200
    assert admin_client.get(reverse(f"admin:{name}_changelist"), {"q": "gb"}).status_code == 200


def test_product_and_lab_pages_show_their_inlines(admin_client: Client) -> None:
    call_command("load_catalogue", verbosity=0)
    product = Product.objects.get(sku="GLOBAL-CAN-10X10")
    lab = Lab.objects.get(code="gb1")

    product_page = admin_client.get(reverse("admin:products_product_change", args=[product.pk]))
    lab_page = admin_client.get(reverse("admin:labs_lab_change", args=[lab.pk]))

    assert product_page.status_code == 200
    assert b"ImageWrap" in product_page.content
    assert lab_page.status_code == 200
    assert b"Royal Mail" in lab_page.content


def test_marking_a_lab_product_out_of_stock_from_the_list(admin_client: Client) -> None:
    call_command("load_catalogue", verbosity=0)
    lab = Lab.objects.get(code="gb1")
    lab_product = lab.products.get(product__sku="GLOBAL-FAP-10X10")
    rows = list(lab.products.all())

    form = {
        "form-TOTAL_FORMS": str(len(rows)),
        "form-INITIAL_FORMS": str(len(rows)),
        "_save": "Save",
    }
    for index, row in enumerate(rows):
        form[f"form-{index}-id"] = str(row.pk)
        if row.pk != lab_product.pk:
            form[f"form-{index}-in_stock"] = "on"
    url = reverse("admin:labs_labproduct_changelist") + f"?lab__id__exact={lab.pk}"
    response = admin_client.post(url, form)

    assert response.status_code == 302
    lab_product.refresh_from_db()
    assert lab_product.in_stock is False
    assert lab.products.filter(in_stock=True).count() == len(rows) - 1


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("https://lab.example.com:0/api", "port 0 cannot be connected to."),
        ("https://user:pw@lab.example.com/api", "URLs with credentials are not fetched."),
    ],
)
def test_the_lab_admin_refuses_a_base_url_that_cannot_be_sent_to(
    admin_client: Client, base_url: str, message: str
) -> None:
    call_command("load_catalogue", verbosity=0)
    lab = Lab.objects.get(code="gb1")
    url = reverse("admin:labs_lab_change", args=[lab.pk])

    response = admin_change_post(admin_client, url, {"siteflow_base_url": base_url})

    assert response.status_code == 200
    assert message in response.content.decode()
    assert Lab.objects.get(pk=lab.pk).siteflow_base_url == ""


def test_the_lab_admin_refuses_a_full_width_currency(admin_client: Client) -> None:
    call_command("load_catalogue", verbosity=0)
    lab = Lab.objects.get(code="gb1")
    url = reverse("admin:labs_lab_change", args=[lab.pk])

    response = admin_change_post(admin_client, url, {"currency": FULL_WIDTH_GBP})

    assert response.status_code == 200
    assert "is not an upper-case ISO 4217 currency code." in response.content.decode()
    assert Lab.objects.get(pk=lab.pk).currency == "GBP"


def test_the_lab_admin_saves_its_page_unchanged(admin_client: Client) -> None:
    call_command("load_catalogue", verbosity=0)
    lab = Lab.objects.get(code="gb1")

    response = admin_change_post(admin_client, reverse("admin:labs_lab_change", args=[lab.pk]), {})

    assert response.status_code == 302
