"""Whether a request item describes a catalogue product completely: shared by quotes and orders.

Failures are keyed by field path below the item's own path (``items[0].attributes.wrap``,
``items[0].assets[1].printArea``) and are ``(code, description)`` pairs, the form
``common.errors.ValidationFailed`` takes.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from common.errors import ValidationFailed
from products.models import Product
from products.selectors import product_get, products_by_sku

Failures = dict[str, list[tuple[str, str]]]

DEFAULT_PRINT_AREA = "default"


def _add(failures: Failures, path: str, code: str, description: str) -> None:
    failures.setdefault(path, []).append((code, description))


def _merge(failures: Failures, more: Failures) -> None:
    for path, pairs in more.items():
        failures.setdefault(path, []).extend(pairs)


def item_page_count(assets: Iterable[tuple[str, int | None]]) -> int | None:
    """An item's page count from its assets' (print area, pageCount) pairs: the main
    (``default``) asset's, else the first that has one. Quotes, order validation and
    allocation all count pages this way, so they price the same book the same."""
    pairs = list(assets)
    for area, pages in pairs:
        if area.lower() == DEFAULT_PRINT_AREA and pages is not None:
            return pages
    return next((pages for _, pages in pairs if pages is not None), None)


def attribute_failures(*, product: Product, attributes: Mapping[str, str], path: str) -> Failures:
    """Unknown names, values not allowed, required attributes missing (names and values match
    in any letter case)."""
    failures: Failures = {}
    by_name = {a.name.lower(): a for a in product.attributes.all()}
    given: set[str] = set()
    for name, value in attributes.items():
        attribute = by_name.get(name.lower())
        if attribute is None:
            known = ", ".join(sorted(a.name for a in by_name.values())) or "none"
            _add(
                failures,
                f"{path}.attributes.{name}",
                "UnknownAttribute",
                f"{product.sku} has no attribute '{name}' (attributes: {known}).",
            )
            continue
        given.add(attribute.name)
        if not isinstance(value, str) or value.lower() not in {v.lower() for v in attribute.values}:
            _add(
                failures,
                f"{path}.attributes.{name}",
                "UnknownAttributeValue",
                f"'{value}' is not a value of {attribute.name} for {product.sku} "
                f"(values: {', '.join(attribute.values)}).",
            )
    for attribute in by_name.values():
        if attribute.required and attribute.name not in given:
            _add(
                failures,
                f"{path}.attributes.{attribute.name}",
                "Required",
                f"{product.sku} needs attribute '{attribute.name}' "
                f"(values: {', '.join(attribute.values)}).",
            )
    return failures


def resolve_attributes(*, product: Product, attributes: Mapping[str, str]) -> dict[str, str]:
    """Every attribute of the product in canonical spelling, defaults filled in.

    Call only with attributes that passed ``attribute_failures``.
    """
    given = {name.lower(): value.lower() for name, value in attributes.items()}
    resolved: dict[str, str] = {}
    for attribute in product.attributes.all():
        wanted = given.get(attribute.name.lower())
        if wanted is None:
            resolved[attribute.name] = attribute.default
        else:
            resolved[attribute.name] = next(v for v in attribute.values if v.lower() == wanted)
    return resolved


def canonical_attributes(*, product: Product, attributes: Mapping[str, str]) -> dict[str, str]:
    """The given attributes only (no defaults), names and values in canonical spelling."""
    resolved = resolve_attributes(product=product, attributes=attributes)
    given = {name.lower() for name in attributes}
    return {name: value for name, value in resolved.items() if name.lower() in given}


def canonical_print_area(*, product: Product, print_area: str) -> str | None:
    return next(
        (a.name for a in product.print_areas.all() if a.name.lower() == print_area.lower()),
        None,
    )


def item_failures(
    *,
    sku: str,
    attributes: Mapping[str, str],
    print_areas: Sequence[str],
    page_count: int | None,
    path: str,
    require_page_count: bool,
    product: Product | None = None,
) -> Failures:
    """Everything wrong with one request item, keyed by field path; empty when it is valid.

    ``print_areas`` are the item's assets' print areas in request order (their index is the
    asset's index). ``page_count`` is the item's page count (from its assets' ``pageCount``);
    a product priced by page needs one when ``require_page_count`` (orders), otherwise its
    included pages are assumed (quotes). ``product`` may be passed when already loaded.
    """
    if product is None or product.sku != sku.strip().upper():
        product = product_get(sku=sku)
    if product is None:
        return _unknown_sku(sku=sku, path=path)
    return _product_failures(
        product=product,
        attributes=attributes,
        print_areas=print_areas,
        page_count=page_count,
        path=path,
        require_page_count=require_page_count,
    )


def _unknown_sku(*, sku: str, path: str) -> Failures:
    return {f"{path}.sku": [("UnknownSku", f"There is no product with SKU '{sku}'.")]}


def _product_failures(
    *,
    product: Product,
    attributes: Mapping[str, str],
    print_areas: Sequence[str],
    page_count: int | None,
    path: str,
    require_page_count: bool,
) -> Failures:
    failures: Failures = {}
    _merge(failures, attribute_failures(product=product, attributes=attributes, path=path))
    if not failures:
        resolved = resolve_attributes(product=product, attributes=attributes)
        variants = list(product.variants.all())
        if variants and not any(v.attributes == resolved for v in variants):
            values = ", ".join(f"{k}={v}" for k, v in resolved.items())
            _add(
                failures,
                f"{path}.attributes",
                "VariantNotAvailable",
                f"{product.sku} is not made with {values}.",
            )

    seen: set[str] = set()
    for index, print_area in enumerate(print_areas):
        name = canonical_print_area(product=product, print_area=print_area)
        area_path = f"{path}.assets[{index}].printArea"
        if name is None:
            known = ", ".join(a.name for a in product.print_areas.all())
            _add(
                failures,
                area_path,
                "UnknownPrintArea",
                f"{product.sku} has no print area '{print_area}' (print areas: {known}).",
            )
        elif name in seen:
            _add(failures, area_path, "DuplicatePrintArea", f"Print area '{name}' is repeated.")
        else:
            seen.add(name)
    for area in product.print_areas.all():
        if area.required and area.name not in seen:
            _add(
                failures,
                f"{path}.assets",
                "MissingPrintArea",
                f"{product.sku} needs an asset for print area '{area.name}'.",
            )

    if product.priced_by_page:
        lowered = [p.lower() for p in print_areas]
        index = lowered.index(DEFAULT_PRINT_AREA) if DEFAULT_PRINT_AREA in lowered else 0
        page_path = f"{path}.assets[{index}].pageCount"
        if page_count is None:
            if require_page_count:
                _add(
                    failures,
                    page_path,
                    "Required",
                    f"{product.sku} is priced by page: give the pageCount of its assets.",
                )
        elif not (product.min_pages or 0) <= page_count <= (product.max_pages or page_count):
            _add(
                failures,
                page_path,
                "PageCountOutOfRange",
                f"{product.sku} has between {product.min_pages} and {product.max_pages} pages.",
            )
    return failures


@dataclass(frozen=True)
class ItemInput:
    """One request item (of a quote or an order) as the catalogue check needs it.

    ``print_areas`` and ``page_counts`` are per asset in request order (an asset's index is its
    position), ``default`` for an asset that names no print area and ``None`` for one without
    a ``pageCount``."""

    sku: str
    copies: int
    attributes: Mapping[str, str]
    print_areas: Sequence[str]
    page_counts: Sequence[int | None]


@dataclass(frozen=True)
class ValidatedItem:
    """A request item that passed the catalogue check, in the spelling the catalogue uses, so
    that pricing and storage need not look anything up again.

    ``attributes`` are every attribute of the product, defaults filled in (what is made and
    priced); ``given_attributes`` only those the request named (what is stored and shown).
    ``print_areas`` are canonical, one per asset. ``page_count`` follows ``item_page_count``;
    ``None`` when the request gave none (a quote then prices the included pages).
    """

    index: int
    product: Product
    copies: int
    attributes: Mapping[str, str]
    given_attributes: Mapping[str, str]
    print_areas: tuple[str, ...]
    page_count: int | None

    @property
    def key(self) -> str:
        """The item's handle in an allocation basket and its plan: its position in the request."""
        return str(self.index)

    @property
    def sku(self) -> str:
        return self.product.sku


def basket_validate(
    *,
    items: Sequence[ItemInput],
    require_page_count: bool,
    products: Mapping[str, Product] | None = None,
) -> list[ValidatedItem]:
    """Check every item of a basket against the catalogue once and return it in canonical form.

    Quotes and orders both price and store what this returns instead of deriving products,
    attributes, print areas and page counts again. Raises ``ValidationFailed`` with every
    failure of every item at once, keyed ``items[<index>]...`` in item order. ``products``
    (keyed by upper-case SKU, as ``products_by_sku`` returns them) saves loading the catalogue
    when the caller already has it; a SKU missing from it is unknown. ``require_page_count``
    as for ``item_failures``.
    """
    if products is None:
        products = products_by_sku(skus=[item.sku for item in items])
    failures: Failures = {}
    validated: list[ValidatedItem] = []
    for index, item in enumerate(items):
        path = f"items[{index}]"
        product = products.get(item.sku.strip().upper())
        page_count = item_page_count(zip(item.print_areas, item.page_counts, strict=True))
        if product is None:
            _merge(failures, _unknown_sku(sku=item.sku, path=path))
            continue
        _merge(
            failures,
            _product_failures(
                product=product,
                attributes=item.attributes,
                print_areas=item.print_areas,
                page_count=page_count,
                path=path,
                require_page_count=require_page_count,
            ),
        )
        if failures:
            continue  # nothing is returned, so nothing more to derive
        area_names = {area.name.lower(): area.name for area in product.print_areas.all()}
        validated.append(
            ValidatedItem(
                index=index,
                product=product,
                copies=item.copies,
                attributes=resolve_attributes(product=product, attributes=item.attributes),
                given_attributes=canonical_attributes(product=product, attributes=item.attributes),
                print_areas=tuple(area_names[area.lower()] for area in item.print_areas),
                page_count=page_count,
            )
        )
    if failures:
        raise ValidationFailed(failures)
    return validated
