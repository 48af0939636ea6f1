from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from products.models import Category, Paper, PrintArea, Product, ProductAttribute, Variant


class PaperFactory(DjangoModelFactory[Paper]):
    class Meta:
        model = Paper
        django_get_or_create = ("name",)

    name = "Matte 170gsm"
    mm_per_page = Decimal("0.0900")


class ProductFactory(DjangoModelFactory[Product]):
    """A plain print with a required ``default`` print area and no attributes."""

    class Meta:
        model = Product
        skip_postgeneration_save = True

    sku = factory.Sequence(lambda n: f"TEST-PRINT-{n}")
    description = factory.LazyAttribute(lambda p: f"Test product {p.sku}")
    category = Category.FINE_ART
    width = Decimal("10")
    height = Decimal("10")
    units = "in"

    @factory.post_generation
    def default_print_area(
        self: Product, create: bool, extracted: bool | None, **kwargs: object
    ) -> None:
        if create and extracted is not False:
            PrintArea.objects.create(product=self, name="default", required=True)


class PhotobookFactory(ProductFactory):
    sku = factory.Sequence(lambda n: f"TEST-BOOK-{n}")
    category = Category.PHOTOBOOK
    width = Decimal("297")
    height = Decimal("210")
    units = "mm"
    pages_included = 24
    min_pages = 24
    max_pages = 200
    paper = factory.SubFactory(PaperFactory)
    spine_base_mm = Decimal("6.00")

    @factory.post_generation
    def spine_print_area(
        self: Product, create: bool, extracted: bool | None, **kwargs: object
    ) -> None:
        if create:
            PrintArea.objects.create(product=self, name="spine", required=False)


class ProductAttributeFactory(DjangoModelFactory[ProductAttribute]):
    class Meta:
        model = ProductAttribute

    product = factory.SubFactory(ProductFactory)
    name = "wrap"
    values = ["Black", "ImageWrap", "MirrorWrap", "White"]
    required = True
    default = ""


class PrintAreaFactory(DjangoModelFactory[PrintArea]):
    class Meta:
        model = PrintArea

    product = factory.SubFactory(ProductFactory)
    name = "lid"
    required = False


class VariantFactory(DjangoModelFactory[Variant]):
    class Meta:
        model = Variant

    product = factory.SubFactory(ProductFactory)
    attributes: dict[str, str] = {}
    print_area_sizes = {"default": {"horizontalResolution": 3000, "verticalResolution": 3000}}
