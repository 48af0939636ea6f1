"""Reads of the catalogue."""

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Prefetch, QuerySet

from common.versions import version_current
from products.models import PrintArea, Product, ProductAttribute, Variant


def _products() -> QuerySet[Product]:
    return (
        Product.objects.filter(is_active=True)
        .select_related("paper")
        .prefetch_related(
            Prefetch("attributes", queryset=ProductAttribute.objects.order_by("name")),
            Prefetch("print_areas", queryset=PrintArea.objects.order_by("-required", "name")),
            Prefetch("variants", queryset=Variant.objects.order_by("id")),
        )
    )


def catalogue_version() -> int | None:
    """The current catalogue version (None only before the first catalogue write after a
    flush): read with the other versions, once per request (``common.versions``)."""
    return version_current("catalogue")


def products_all() -> dict[str, Product]:
    """Every active product keyed by SKU, attributes, print areas and variants loaded."""
    return {p.sku: p for p in _products()}


def product_get(*, sku: str) -> Product | None:
    """The active product with this SKU in any letter case, attributes and print areas loaded."""
    return _products().filter(sku=sku.strip().upper()).first()


def products_by_sku(*, skus: Iterable[str]) -> dict[str, Product]:
    """Active products keyed by canonical (upper-case) SKU, attributes, print areas and
    variants loaded."""
    wanted = {sku.strip().upper() for sku in skus}
    return {p.sku: p for p in _products().filter(sku__in=wanted)}


def spine_width_mm(*, product: Product, pages: int) -> Decimal:
    """Spine width of a book with ``pages`` pages: boards plus paper, to 0.01 mm (half up).

    Raises ``ValueError`` for a product without a spine or a page count outside its range.
    """
    if not product.has_spine or product.paper is None or product.spine_base_mm is None:
        raise ValueError(f"{product.sku} has no spine.")
    if product.min_pages is not None and pages < product.min_pages:
        raise ValueError(f"{product.sku} has at least {product.min_pages} pages.")
    if product.max_pages is not None and pages > product.max_pages:
        raise ValueError(f"{product.sku} has at most {product.max_pages} pages.")
    width = product.spine_base_mm + product.paper.mm_per_page * pages
    return width.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
