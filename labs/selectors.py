"""Reads of labs, their products, shipping rates and exchange rates."""

from collections.abc import Collection

from common.countries import COUNTRY_CODES
from labs.capabilities import CAPABILITIES
from labs.catalogue import CatalogueSnapshot, Zone, catalogue_snapshot
from labs.connectors.registry import simulator_serves
from labs.models import Lab, ShippingRate
from products.models import Product


def lab_get(*, code: str) -> Lab | None:
    return Lab.objects.filter(code=code.strip().lower()).first()


def countries_reached(*, product: Product, sandbox: bool | None = None) -> list[str]:
    """Countries that some active lab making ``product`` delivers to by at least one method,
    from the process's catalogue snapshot; for an environment (``sandbox`` given), only the
    labs its orders may use (``labs.connectors.simulator_serves``, as pricing does).

    Stock is ignored: a product out of stock for a while still ships to the same places.
    """
    snapshot = catalogue_snapshot()
    zones = {zone.id: zone for zone in snapshot.zones}
    return _countries_reached(snapshot, zones, product, _real_labs_only(sandbox))


def _real_labs_only(sandbox: bool | None) -> bool:
    return sandbox is not None and not simulator_serves(sandbox=sandbox)


def _countries_reached(
    snapshot: CatalogueSnapshot, zones: dict[int, Zone], product: Product, real_labs_only: bool
) -> list[str]:
    countries: set[str] = set()
    for lab_product in snapshot.lab_products.get(product.id, ()):
        if real_labs_only and not lab_product.lab.has_real_connector:
            continue
        for rate in snapshot.rates.get(lab_product.lab_id, ()):
            if rate.zone_id is None:
                countries.add(rate.country_code)
            elif zones[rate.zone_id].rest_of_world:
                return sorted(COUNTRY_CODES)
            else:
                countries.update(zones[rate.zone_id].countries)
    return sorted(countries)


def products_with_countries(
    *, category: str | None = None, sandbox: bool | None = None
) -> list[tuple[Product, list[str]]]:
    """Every active product (of ``category``, if given) in SKU order, each with what
    ``countries_reached`` answers for it (for the environment ``sandbox`` names, if given)."""
    snapshot = catalogue_snapshot()
    zones = {zone.id: zone for zone in snapshot.zones}
    real_labs_only = _real_labs_only(sandbox)
    return [
        (product, _countries_reached(snapshot, zones, product, real_labs_only))
        for _, product in sorted(snapshot.products.items())
        if category is None or product.category == category
    ]


def countries_shipped_to(*, listed: list[tuple[Product, list[str]]] | None = None) -> list[str]:
    """Every country some active product ships to, sorted (from ``listed``, the answer of
    ``products_with_countries()`` when the caller has it already)."""
    if listed is None:
        listed = products_with_countries()
    return sorted({c for _, countries in listed for c in countries})


def currencies_supported() -> set[str]:
    """Currencies a quote or order can be priced in: the base and every one with a rate."""
    return set(catalogue_snapshot().units_per_base)


def shipping_rate_for(*, lab_code: str, method: str, country_code: str) -> ShippingRate | None:
    """The rate a lab ships by ``method`` to a country with: the most specific one (a country
    rate, then a zone listing the country, then a rest-of-world zone), as the engine picks."""
    rates = list(
        ShippingRate.objects.filter(lab__code=lab_code, method=method).select_related("zone")
    )
    for matches in (
        lambda r: r.country_code == country_code,
        lambda r: r.zone is not None and country_code in (r.zone.countries or []),
        lambda r: r.zone is not None and r.zone.rest_of_world,
    ):
        found = [r for r in rates if matches(r)]
        if found:
            return found[0]
    return None


def labs_capabilities(*, codes: Collection[str]) -> dict[str, frozenset[str]]:
    """What each lab's connector can do to a lab order after submission, in one read (a code
    no lab has: the whole vocabulary, as its connector would say); the labs are not asked."""
    found = dict(Lab.objects.filter(code__in=set(codes)).values_list("code", "capabilities"))
    return {code: frozenset(found.get(code, CAPABILITIES)) for code in codes}
