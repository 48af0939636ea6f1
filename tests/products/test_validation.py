"""The catalogue check shared by quotes and orders."""

from typing import Any

import pytest

from common.errors import ValidationFailed
from products.selectors import products_by_sku
from products.validation import (
    ItemInput,
    ValidatedItem,
    basket_validate,
    item_failures,
    resolve_attributes,
)
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


def item(
    sku: str,
    attributes: dict[str, str] | None = None,
    assets: tuple[tuple[str, int | None], ...] = (("default", None),),
    copies: int = 1,
) -> ItemInput:
    return ItemInput(
        sku=sku,
        copies=copies,
        attributes=attributes or {},
        print_areas=[area for area, _ in assets],
        page_counts=[pages for _, pages in assets],
    )


def test_a_validated_item_is_in_catalogue_spelling_with_defaults_filled_in() -> None:
    canvas = ProductFactory.create(sku="CAN")
    ProductAttributeFactory(product=canvas, name="wrap", values=["Black", "ImageWrap"])
    ProductAttributeFactory(
        product=canvas, name="finish", values=["gloss", "lustre"], required=False, default="lustre"
    )
    PrintAreaFactory(product=canvas, name="lid", required=False)

    validated = basket_validate(
        items=[item(" can ", {"WRAP": "imagewrap"}, (("LID", None), ("Default", None)), copies=3)],
        require_page_count=True,
    )

    assert validated == [
        ValidatedItem(
            index=0,
            product=canvas,
            copies=3,
            attributes={"finish": "lustre", "wrap": "ImageWrap"},
            given_attributes={"wrap": "ImageWrap"},
            print_areas=("lid", "default"),
            page_count=None,
        )
    ]
    assert (validated[0].key, validated[0].sku) == ("0", "CAN")


def test_the_page_count_is_the_main_assets_else_the_first_given() -> None:
    PhotobookFactory(sku="BOOK")
    items = [
        item("BOOK", assets=(("spine", 30), ("default", 40))),
        item("BOOK", assets=(("spine", 30), ("default", None))),
        item("BOOK", assets=(("default", None), ("spine", None))),
    ]

    validated = basket_validate(items=items, require_page_count=False)

    assert [(v.key, v.print_areas, v.page_count) for v in validated] == [
        ("0", ("spine", "default"), 40),
        ("1", ("spine", "default"), 30),
        ("2", ("default", "spine"), None),
    ]


def failures_of(items: list[ItemInput], **kwargs: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    with pytest.raises(ValidationFailed) as refused:
        basket_validate(items=items, **kwargs)
    return list(refused.value.failures.items())


def test_an_order_needs_the_page_count_a_quote_assumes() -> None:
    PhotobookFactory(sku="BOOK")
    items = [item("BOOK", assets=(("spine", None), ("default", None)))]

    assert failures_of(items, require_page_count=True) == [
        (
            "items[0].assets[1].pageCount",
            [("Required", "BOOK is priced by page: give the pageCount of its assets.")],
        )
    ]
    [validated] = basket_validate(items=items, require_page_count=False)
    assert validated.page_count is None


def test_every_failure_of_every_item_is_reported_at_once_in_item_order() -> None:
    canvas = ProductFactory(sku="CAN")
    ProductAttributeFactory(product=canvas, name="wrap", values=["Black", "White"])
    PhotobookFactory(sku="BOOK")
    items = [
        item("CAN", {"wrap": "Gold"}, (("lid", None),)),
        item("CAN", {"wrap": "black"}),
        item("NOPE-1"),
        item("BOOK", assets=(("default", 500),)),
    ]

    assert failures_of(items, require_page_count=True) == [
        (
            "items[0].attributes.wrap",
            [
                (
                    "UnknownAttributeValue",
                    "'Gold' is not a value of wrap for CAN (values: Black, White).",
                )
            ],
        ),
        (
            "items[0].assets[0].printArea",
            [("UnknownPrintArea", "CAN has no print area 'lid' (print areas: default).")],
        ),
        (
            "items[0].assets",
            [("MissingPrintArea", "CAN needs an asset for print area 'default'.")],
        ),
        ("items[2].sku", [("UnknownSku", "There is no product with SKU 'NOPE-1'.")]),
        (
            "items[3].assets[0].pageCount",
            [("PageCountOutOfRange", "BOOK has between 24 and 200 pages.")],
        ),
    ]


def test_a_loaded_catalogue_is_not_read_again(django_assert_num_queries: Any) -> None:
    ProductFactory(sku="CAN")
    products = products_by_sku(skus=["CAN", "NOPE-1"])

    with django_assert_num_queries(0):
        [validated] = basket_validate(
            items=[item("can")], require_page_count=True, products=products
        )
        assert validated.product is products["CAN"]
        assert failures_of([item("NOPE-1")], require_page_count=True, products=products) == [
            ("items[0].sku", [("UnknownSku", "There is no product with SKU 'NOPE-1'.")])
        ]
