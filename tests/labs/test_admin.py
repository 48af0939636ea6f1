"""Staff can browse and edit the catalogue and labs in the admin."""

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from labs.models import Lab
from products.models import Product

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
