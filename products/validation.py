"""Whether a request item describes a catalogue product completely: shared by quotes and orders.

Failures are keyed by field path below the item's own path (``items[0].attributes.wrap``,
``items[0].assets[1].printArea``) and are ``(code, description)`` pairs, the form
``common.errors.ValidationFailed`` takes.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from common.errors import ValidationFailed
from products.models import PrintArea, Product, ProductAttribute
from products.selectors import product_get, products_by_sku

Failures = dict[str, list[tuple[str, str]]]

DEFAULT_PRINT_AREA = "default"


def _add(failures: Failures, path: str, code: str, description: str) -> None:
    failures.setdefault(path, []).append((code, description))


def _merge(failures: Failures, more: Failures) -> None:
    for path, pairs in more.items():
        failures.setdefault(path, []).extend(pairs)


@dataclass(frozen=True)
class ProductRules:
    """What the catalogue check reads of a product beside its own fields: its attributes
    (with each one's name and values in lower case, as requests are matched), print areas and
    the attribute sets it is made in. Made from the product's prefetched rows; a catalogue
    snapshot makes them once per product and version (``labs.catalogue``), where reading the
    related rows anew made a related manager at every read, a fifth of a basket's check."""

    attributes: tuple[ProductAttribute, ...]
    attributes_by_name: Mapping[str, ProductAttribute]  # by lower-case name
    values: Mapping[str, frozenset[str]]  # attribute name -> its values in lower case
    print_areas: tuple[PrintArea, ...]
    print_areas_by_name: Mapping[str, str]  # lower-case name -> name, the first if alike
    variants: tuple[Mapping[str, str], ...]

    @classmethod
    def of(cls, product: Product) -> "ProductRules":
        attributes = tuple(product.attributes.all())
        print_areas = tuple(product.print_areas.all())
        return cls(
            attributes=attributes,
            attributes_by_name={a.name.lower(): a for a in attributes},
            values={a.name: frozenset(v.lower() for v in a.values) for a in attributes},
            print_areas=print_areas,
            print_areas_by_name={a.name.lower(): a.name for a in reversed(print_areas)},
            variants=tuple(v.attributes for v in product.variants.all()),
        )


def item_page_count(assets: Iterable[tuple[str, int | None]]) -> int | None:
    """An item's page count from its assets' (print area, pageCount) pairs: the main
    (``default``) asset's, else the first that has one. Quotes, order validation and
    allocation all count pages this way, so they price the same book the same."""
    pairs = list(assets)
    for area, pages in pairs:
        if area.lower() == DEFAULT_PRINT_AREA and pages is not None:
            return pages
    return next((pages for _, pages in pairs if pages is not None), None)


def attribute_failures(
    *,
    product: Product,
    attributes: Mapping[str, str],
    path: str,
    rules: ProductRules | None = None,
) -> Failures:
    """Unknown names, values not allowed, required attributes missing (names and values match
    in any letter case). ``rules``: the product's, where the caller has them."""
    failures: Failures = {}
    rules = rules or ProductRules.of(product)
    by_name = rules.attributes_by_name
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
        if not isinstance(value, str) or value.lower() not in rules.values[attribute.name]:
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


def resolve_attributes(
    *, product: Product, attributes: Mapping[str, str], rules: ProductRules | None = None
) -> dict[str, str]:
    """Every attribute of the product in canonical spelling, defaults filled in.

    Call only with attributes that passed ``attribute_failures``.
    """
    return _resolved(rules or ProductRules.of(product), attributes)[0]


def _resolved(
    rules: ProductRules, attributes: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The attributes resolved (``resolve_attributes``) and the given ones alone, names and
    values in canonical spelling (what is stored and shown), in one pass."""
    given = {name.lower(): value.lower() for name, value in attributes.items()}
    resolved: dict[str, str] = {}
    named: dict[str, str] = {}
    for attribute in rules.attributes:
        wanted = given.get(attribute.name.lower())
        if wanted is None:
            resolved[attribute.name] = attribute.default
        else:
            value = next(v for v in attribute.values if v.lower() == wanted)
            resolved[attribute.name] = named[attribute.name] = value
    return resolved, named


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
    return _product_checked(
        product=product,
        rules=ProductRules.of(product),
        attributes=attributes,
        print_areas=print_areas,
        page_count=page_count,
        path=path,
        require_page_count=require_page_count,
    )[0]


def _unknown_sku(*, sku: str, path: str) -> Failures:
    return {f"{path}.sku": [("UnknownSku", f"There is no product with SKU '{sku}'.")]}


def _product_checked(
    *,
    product: Product,
    rules: ProductRules,
    attributes: Mapping[str, str],
    print_areas: Sequence[str],
    page_count: int | None,
    path: str,
    require_page_count: bool,
) -> tuple[Failures, tuple[dict[str, str], dict[str, str]], tuple[str, ...]]:
    """The item's failures and, for a valid item, what the check found on the way (so that
    nothing is looked up twice): its attributes resolved and as given (``_resolved``), and its
    print areas in canonical spelling, one per asset."""
    failures: Failures = {}
    _merge(
        failures,
        attribute_failures(product=product, attributes=attributes, path=path, rules=rules),
    )
    resolved: tuple[dict[str, str], dict[str, str]] = ({}, {})
    if not failures:
        resolved = _resolved(rules, attributes)
        if rules.variants and resolved[0] not in rules.variants:
            values = ", ".join(f"{k}={v}" for k, v in resolved[0].items())
            _add(
                failures,
                f"{path}.attributes",
                "VariantNotAvailable",
                f"{product.sku} is not made with {values}.",
            )

    areas = rules.print_areas
    canonical: list[str] = []
    for index, print_area in enumerate(print_areas):
        name = rules.print_areas_by_name.get(print_area.lower())
        area_path = f"{path}.assets[{index}].printArea"
        if name is None:
            known = ", ".join(a.name for a in areas)
            _add(
                failures,
                area_path,
                "UnknownPrintArea",
                f"{product.sku} has no print area '{print_area}' (print areas: {known}).",
            )
        elif name in canonical:
            _add(failures, area_path, "DuplicatePrintArea", f"Print area '{name}' is repeated.")
        else:
            canonical.append(name)
    for area in areas:
        if area.required and area.name not in canonical:
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
    return failures, resolved, tuple(canonical)


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
    rules: Mapping[str, ProductRules] | None = None,
) -> list[ValidatedItem]:
    """Check every item of a basket against the catalogue once and return it in canonical form.

    Quotes and orders both price and store what this returns instead of deriving products,
    attributes, print areas and page counts again. Raises ``ValidationFailed`` with every
    failure of every item at once, keyed ``items[<index>]...`` in item order. ``products``
    (keyed by upper-case SKU, as ``products_by_sku`` returns them) saves loading the catalogue
    when the caller already has it; a SKU missing from it is unknown. ``rules``: the
    products' ``ProductRules`` by SKU where the caller keeps them (a catalogue snapshot), else
    they are made here. ``require_page_count`` as for ``item_failures``.
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
        found, (resolved, given), print_areas = _product_checked(
            product=product,
            rules=(rules or {}).get(product.sku) or ProductRules.of(product),
            attributes=item.attributes,
            print_areas=item.print_areas,
            page_count=page_count,
            path=path,
            require_page_count=require_page_count,
        )
        _merge(failures, found)
        if failures:
            continue  # nothing is returned, so nothing more to derive
        validated.append(
            ValidatedItem(
                index=index,
                product=product,
                copies=item.copies,
                attributes=resolved,
                given_attributes=given,
                print_areas=print_areas,
                page_count=page_count,
            )
        )
    if failures:
        raise ValidationFailed(failures)
    return validated
