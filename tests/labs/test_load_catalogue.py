"""``manage.py load_catalogue`` and the demo catalogue it loads."""

from decimal import Decimal

import pytest
from django.core.management import call_command

from labs.allocation import BasketItem, plan_basket
from labs.models import ExchangeRate, Lab, LabProduct, ShippingRate, TaxRule
from products.models import Category, Product, ProductAttribute, Variant
from products.selectors import product_get, spine_width_mm

pytestmark = pytest.mark.django_db


def table_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            Product,
            ProductAttribute,
            Variant,
            Lab,
            LabProduct,
            ShippingRate,
            ExchangeRate,
            TaxRule,
        )
    }


def test_the_command_is_idempotent_and_restores_edited_rows() -> None:
    call_command("load_catalogue", verbosity=0)
    first = table_counts()
    lab_product = LabProduct.objects.get(lab__code="gb1", product__sku="GLOBAL-FAP-10X10")
    price = lab_product.unit_cost
    LabProduct.objects.filter(pk=lab_product.pk).update(unit_cost=Decimal("999.00"), in_stock=False)

    call_command("load_catalogue", verbosity=0)

    assert table_counts() == first
    lab_product.refresh_from_db()
    assert (lab_product.unit_cost, lab_product.in_stock) == (price, True)


def test_the_demo_catalogue_covers_the_documented_products_and_labs() -> None:
    call_command("load_catalogue", verbosity=0)

    assert Product.objects.count() >= 25
    assert set(Product.objects.values_list("category", flat=True)) == set(Category.values)
    assert Lab.objects.count() >= 7
    assert {"GB", "US", "AU", "DE", "NL", "CA"} <= set(
        Lab.objects.values_list("country_code", flat=True)
    )
    for sku in ("GLOBAL-FAP-10X10", "GLOBAL-FAP-16X24", "GLOBAL-PHO-4X6"):
        assert product_get(sku=sku.lower()) is not None
    assert "finish" in [a.name for a in product_get(sku="GLOBAL-PHO-4X6").attributes.all()]  # type: ignore[union-attr]
    wrap = ProductAttribute.objects.get(product__sku="GLOBAL-CAN-10X10", name="wrap")
    assert (wrap.required, wrap.values) == (True, ["Black", "ImageWrap", "MirrorWrap", "White"])
    color = ProductAttribute.objects.get(product__sku="GLOBAL-CFPM-16X20", name="color")
    assert color.required and {"black", "white", "natural"} <= set(color.values)
    book = Product.objects.get(sku="BOOK-A4-L-HARD-M")
    assert {a.name: a.required for a in book.print_areas.all()} == {"default": True, "spine": False}
    assert book.priced_by_page and spine_width_mm(product=book, pages=24) > book.spine_base_mm  # type: ignore[operator]
    assert "lid" in Product.objects.get(sku="JIGSAW-PUZZLE-500").print_areas.values_list(
        "name", flat=True
    )


def test_a_photobook_and_a_framed_print_always_split() -> None:
    call_command("load_catalogue", verbosity=0)
    basket = [
        BasketItem(key="book", sku="BOOK-A4-L-HARD-M", attributes={}, copies=1, pages=40),
        BasketItem(key="frame", sku="GLOBAL-CFPM-16X20", attributes={"color": "white"}, copies=1),
    ]

    for country in ("GB", "US", "DE"):
        plan = plan_basket(
            items=basket,
            country_code=country,
            shipping_method="Standard",
            currency="GBP",
            sandbox=True,
        )
        assert len(plan.shipments) == 2
        assert plan.shipment_of("book").lab_code != plan.shipment_of("frame").lab_code
