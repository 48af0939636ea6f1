"""Reads of labs, their products, shipping rates and exchange rates."""

from common.countries import COUNTRY_CODES
from labs.catalogue import catalogue_snapshot
from labs.models import Lab, ShippingRate
from products.models import Product


def lab_get(*, code: str) -> Lab | None:
    return Lab.objects.filter(code=code.strip().lower()).first()


def countries_reached(*, product: Product) -> list[str]:
    """Countries that some active lab making ``product`` delivers to by at least one method.

    Stock is ignored: a product out of stock for a while still ships to the same places.
    """
    rates = ShippingRate.objects.filter(
        lab__is_active=True, lab__products__product=product
    ).select_related("zone")
    countries: set[str] = set()
    for rate in rates:
        if rate.zone is None:
            countries.add(rate.country_code)
        elif rate.zone.rest_of_world:
            return sorted(COUNTRY_CODES)
        else:
            countries.update(rate.zone.countries)
    return sorted(countries)


def products_with_countries(*, category: str | None = None) -> list[tuple[Product, list[str]]]:
    """Every active product (of ``category``, if given) in SKU order, each with what
    ``countries_reached`` answers for it, from the process's catalogue snapshot."""
    snapshot = catalogue_snapshot()
    zones = {zone.id: zone for zone in snapshot.zones}
    listed: list[tuple[Product, list[str]]] = []
    for _, product in sorted(snapshot.products.items()):
        if category is not None and product.category != category:
            continue
        countries: set[str] = set()
        for lab_product in snapshot.lab_products.get(product.id, ()):
            for rate in snapshot.rates.get(lab_product.lab_id, ()):
                if rate.zone_id is None:
                    countries.add(rate.country_code)
                elif zones[rate.zone_id].rest_of_world:
                    countries.update(COUNTRY_CODES)
                else:
                    countries.update(zones[rate.zone_id].countries)
        listed.append((product, sorted(countries)))
    return listed


def countries_shipped_to() -> list[str]:
    """Every country some active product ships to, sorted."""
    return sorted({c for _, countries in products_with_countries() for c in countries})


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
