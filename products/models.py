"""The catalogue: products, their attributes, print areas, variants and photobook papers.

What a product costs and where it can be made and shipped belongs to the labs app; the
catalogue only says what a product *is* and which requests describe it completely.
"""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models.functions import Upper

# The resolution the recommended pixel sizes of print areas are for (``Variant``): print files
# are tagged with it, so a lab prints each at the size its area is.
PRINT_DPI = 300


class Category(models.TextChoices):
    FINE_ART = "FineArtPrint", "Fine-art print"
    PHOTO = "PhotoPrint", "Photo print"
    CANVAS = "Canvas", "Canvas"
    FRAMED = "FramedPrint", "Framed print"
    PHOTOBOOK = "Photobook", "Photobook"
    JIGSAW = "Jigsaw", "Jigsaw"
    POSTER = "Poster", "Poster"
    GREETING_CARD = "GreetingCard", "Greeting card"


class Units(models.TextChoices):
    INCHES = "in", "Inches"
    CENTIMETRES = "cm", "Centimetres"
    MILLIMETRES = "mm", "Millimetres"


class Paper(models.Model):
    """A photobook paper; its thickness decides how wide a book's spine is."""

    name = models.CharField(max_length=60, unique=True)
    mm_per_page = models.DecimalField(
        max_digits=6,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Spine thickness added by each page (a leaf is two pages).",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Product(models.Model):
    """A printable product identified by its SKU (stored upper-case, looked up in any case).

    A product with ``pages_included`` set is priced by page count (photobooks): a request must
    say how many pages it has, between ``min_pages`` and ``max_pages``; pages beyond
    ``pages_included`` cost the lab's per-page price. A product with ``paper`` set has a spine
    whose width is ``spine_base_mm + pages * paper.mm_per_page``.
    """

    sku = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=300)
    category = models.CharField(max_length=20, choices=Category.choices)
    width = models.DecimalField(max_digits=8, decimal_places=2)
    height = models.DecimalField(max_digits=8, decimal_places=2)
    units = models.CharField(max_length=2, choices=Units.choices, default=Units.INCHES)
    pages_included = models.PositiveIntegerField(
        null=True, blank=True, help_text="Pages in the base price; empty if not priced by page."
    )
    min_pages = models.PositiveIntegerField(null=True, blank=True)
    max_pages = models.PositiveIntegerField(null=True, blank=True)
    paper = models.ForeignKey(
        Paper, null=True, blank=True, on_delete=models.PROTECT, related_name="products"
    )
    spine_base_mm = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Spine width of the cover boards alone; pages add the paper's thickness.",
    )
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["sku"]
        constraints = [
            models.UniqueConstraint(Upper("sku"), name="product_sku_upper_unique"),
            models.CheckConstraint(
                condition=models.Q(sku=Upper("sku")), name="product_sku_is_upper_case"
            ),
        ]

    def __str__(self) -> str:
        return self.sku

    def clean(self) -> None:
        self.sku = self.sku.strip().upper()
        if self.pages_included is not None and (self.min_pages is None or self.max_pages is None):
            raise ValidationError("A product priced by page needs min_pages and max_pages.")
        if (self.paper_id is None) != (self.spine_base_mm is None):
            raise ValidationError("A spine needs both a paper and a base width.")

    @property
    def priced_by_page(self) -> bool:
        return self.pages_included is not None

    @property
    def has_spine(self) -> bool:
        return self.paper_id is not None and self.spine_base_mm is not None


class ProductAttribute(models.Model):
    """A product option (frame colour, canvas wrap, paper finish) and its allowed values.

    A required attribute must be given in a request; an optional one falls back to ``default``.
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="attributes")
    name = models.CharField(max_length=40)
    values = models.JSONField(default=list, help_text='Allowed values, e.g. ["Black", "White"].')
    required = models.BooleanField(default=True)
    default = models.CharField(max_length=40, blank=True)

    class Meta:
        ordering = ["product", "name"]
        constraints = [
            models.UniqueConstraint(fields=["product", "name"], name="one_attribute_per_name")
        ]

    def __str__(self) -> str:
        return f"{self.product.sku}: {self.name}"

    def clean(self) -> None:
        if not isinstance(self.values, list) or not all(isinstance(v, str) for v in self.values):
            raise ValidationError({"values": "A list of strings."})
        if not self.required and self.default not in self.values:
            raise ValidationError({"default": "An optional attribute needs a default value."})


class PrintArea(models.Model):
    """A surface that takes an image (``default``, ``spine``, ``lid``); required ones need an
    asset in every request."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="print_areas")
    name = models.CharField(max_length=40)
    required = models.BooleanField(default=True)

    class Meta:
        ordering = ["product", "-required", "name"]
        constraints = [
            models.UniqueConstraint(fields=["product", "name"], name="one_print_area_per_name")
        ]

    def __str__(self) -> str:
        return f"{self.product.sku}: {self.name}"


class Variant(models.Model):
    """One combination of attribute values, with the recommended pixel size per print area
    (its physical size at ``PRINT_DPI``).

    ``print_area_sizes`` is ``{"default": {"horizontalResolution": 3000, "verticalResolution":
    3000}}``. Where a variant ships to is not stored: it follows from the labs that make the
    product (see ``labs.selectors.countries_reached``).
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="variants")
    attributes = models.JSONField(default=dict, blank=True)
    print_area_sizes = models.JSONField(default=dict)

    class Meta:
        ordering = ["product", "id"]

    def __str__(self) -> str:
        values = ", ".join(f"{k}={v}" for k, v in sorted(self.attributes.items()))
        return f"{self.product.sku} ({values or 'no attributes'})"


class CatalogueVersion(models.Model):
    """One row whose ``number`` changes in the transaction of every write to the catalogue or
    the lab data (products, attributes, print areas, variants, papers, labs, lab products,
    zones, rates, exchange rates, taxes): database triggers set it (see
    ``products.versioning``), so no writer can forget to. Processes keep the catalogue in memory
    and reuse it while this number is the one they loaded it with.

    The number is random rather than counted, so that a version undone by a rollback is never
    reused for different data."""

    number = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"catalogue version {self.number}"
