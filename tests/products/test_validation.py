"""The catalogue check shared by quotes and orders."""

import pytest

from products.validation import item_failures, resolve_attributes
from tests.products.factories import (
    PhotobookFactory,
    PrintAreaFactory,
    ProductAttributeFactory,
    ProductFactory,
    VariantFactory,
)

pytestmark = pytest.mark.django_db


def check(
    sku: str,
    attributes: dict[str, str] | None = None,
    print_areas: tuple[str, ...] = ("default",),
    page_count: int | None = None,
    require_page_count: bool = True,
):  # type: ignore[no-untyped-def]
    return item_failures(
        sku=sku,
        attributes=attributes or {},
        print_areas=print_areas,
        page_count=page_count,
        path="items[2]",
        require_page_count=require_page_count,
    )


def test_a_complete_item_has_no_failures_whatever_the_letter_case() -> None:
    canvas = ProductFactory.create(sku="GLOBAL-CAN-10X10")
    ProductAttributeFactory(product=canvas, name="wrap", values=["Black", "ImageWrap"])

    assert check("global-can-10x10", {"WRAP": "imagewrap"}, ("Default",)) == {}
    assert resolve_attributes(product=canvas, attributes={"WRAP": "imagewrap"}) == {
        "wrap": "ImageWrap"
    }


def test_unknown_sku() -> None:
    assert check("NOPE-1") == {
        "items[2].sku": [("UnknownSku", "There is no product with SKU 'NOPE-1'.")]
    }


def test_attribute_failures_name_the_attribute() -> None:
    canvas = ProductFactory(sku="CAN")
    ProductAttributeFactory(product=canvas, name="wrap", values=["Black", "White"])

    assert check("CAN", {"colour": "red"}) == {
        "items[2].attributes.colour": [
            ("UnknownAttribute", "CAN has no attribute 'colour' (attributes: wrap).")
        ],
        "items[2].attributes.wrap": [
            ("Required", "CAN needs attribute 'wrap' (values: Black, White).")
        ],
    }
    assert check("CAN", {"wrap": "Gold"}) == {
        "items[2].attributes.wrap": [
            (
                "UnknownAttributeValue",
                "'Gold' is not a value of wrap for CAN (values: Black, White).",
            )
        ]
    }


def test_optional_attributes_take_their_default() -> None:
    photo = ProductFactory.create(sku="PHO")
    ProductAttributeFactory(
        product=photo, name="finish", values=["gloss", "lustre"], required=False, default="lustre"
    )

    assert check("PHO") == {}
    assert resolve_attributes(product=photo, attributes={}) == {"finish": "lustre"}


def test_a_combination_without_a_variant_is_refused() -> None:
    framed = ProductFactory(sku="FRAME")
    ProductAttributeFactory(product=framed, name="color", values=["black", "gold"])
    VariantFactory(product=framed, attributes={"color": "black"})

    assert check("FRAME", {"color": "black"}) == {}
    assert check("FRAME", {"color": "gold"}) == {
        "items[2].attributes": [("VariantNotAvailable", "FRAME is not made with color=gold.")]
    }


def test_print_area_failures_name_the_asset() -> None:
    jigsaw = ProductFactory(sku="JIG")
    PrintAreaFactory(product=jigsaw, name="lid", required=False)

    assert check("JIG", print_areas=("default", "lid")) == {}
    assert check("JIG", print_areas=("lid", "spine", "lid")) == {
        "items[2].assets[1].printArea": [
            ("UnknownPrintArea", "JIG has no print area 'spine' (print areas: default, lid).")
        ],
        "items[2].assets[2].printArea": [("DuplicatePrintArea", "Print area 'lid' is repeated.")],
        "items[2].assets": [("MissingPrintArea", "JIG needs an asset for print area 'default'.")],
    }


def test_products_priced_by_page_need_a_page_count_in_range() -> None:
    PhotobookFactory(sku="BOOK")

    assert check("BOOK", print_areas=("spine", "default"), page_count=40) == {}
    assert check("BOOK", print_areas=("spine", "default")) == {
        "items[2].assets[1].pageCount": [
            ("Required", "BOOK is priced by page: give the pageCount of its assets.")
        ]
    }
    assert check("BOOK", require_page_count=False) == {}
    assert check("BOOK", page_count=201) == {
        "items[2].assets[0].pageCount": [
            ("PageCountOutOfRange", "BOOK has between 24 and 200 pages.")
        ]
    }
