"""The catalogue and lab data in memory: loaded once per process, reused while the catalogue
version (``products.models.CatalogueVersion``, changed by triggers in the transaction of every
catalogue write) stays the one it was loaded with.

Every request that prices or validates a basket reads the version and gets the
snapshot for it, so a price changed in the admin is used by the very next request of every
process. The rows in a snapshot are shared by every request of the process: nothing may modify
them.
"""

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, TypeVar

from labs.models import ExchangeRate, Lab, LabProduct, ShippingRate, ShippingZone, TaxRule
from products.models import Product
from products.selectors import catalogue_version, products_all
from products.validation import ProductRules

_Row = TypeVar("_Row")
_Derived = TypeVar("_Derived")


@dataclass(frozen=True)
class Zone:
    id: int
    countries: frozenset[str]
    rest_of_world: bool


@dataclass(frozen=True)
class CatalogueSnapshot:
    """What validation and the allocation engine read, as of catalogue version ``version``."""

    version: int | None
    # Active products keyed by upper-case SKU, attributes, print areas and variants loaded.
    products: Mapping[str, Product]
    # What the catalogue check reads of each of them, by the same keys.
    rules: Mapping[str, ProductRules]
    # The codes of the active labs, in code order.
    lab_codes: tuple[str, ...]
    # Product id -> what active labs charge for it (with the lab), in lab code order.
    lab_products: Mapping[int, tuple[LabProduct, ...]]
    zones: tuple[Zone, ...]
    # Lab id -> every shipping rate of the lab.
    rates: Mapping[int, tuple[ShippingRate, ...]]
    # Currency -> units one unit of the base currency buys (the base itself included).
    units_per_base: Mapping[str, Decimal]
    tax_rules: Mapping[str, TaxRule]
    # ``derived``'s values by key.
    _derived: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    def derived(self, key: Hashable, make: Callable[[], _Derived]) -> _Derived:
        """What ``make`` derives from this snapshot alone (``key`` names it: the same key, the
        same value), made at its first use in the process and kept with the snapshot, so that
        every request of the version reuses it (the shipping rates to a country). Two threads
        may both make it once; either value is the same."""
        try:
            value: _Derived = self._derived[key]
        except KeyError:
            value = self._derived[key] = make()
        return value

    def products_by_sku(self, skus: list[str]) -> dict[str, Product]:
        """Those of ``skus`` (any letter case) that are active products, keyed as stored."""
        wanted = {sku.strip().upper() for sku in skus}
        return {sku: self.products[sku] for sku in wanted if sku in self.products}


def _grouped(pairs: list[tuple[int, _Row]]) -> dict[int, tuple[_Row, ...]]:
    grouped: dict[int, list[_Row]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return {key: tuple(values) for key, values in grouped.items()}


def catalogue_load(*, version: int | None) -> CatalogueSnapshot:
    """Read the whole catalogue; ``version`` is the one read before, so the data is at least
    as new as the version it is filed under."""
    lab_products = LabProduct.objects.filter(lab__is_active=True).select_related("lab")
    units_per_base = {ExchangeRate.BASE_CURRENCY: Decimal(1)}
    units_per_base.update(ExchangeRate.objects.values_list("currency", "units_per_base"))
    products = products_all()
    return CatalogueSnapshot(
        version=version,
        products=MappingProxyType(products),
        rules=MappingProxyType({sku: ProductRules.of(p) for sku, p in products.items()}),
        lab_codes=tuple(
            Lab.objects.filter(is_active=True).order_by("code").values_list("code", flat=True)
        ),
        lab_products=MappingProxyType(
            _grouped(
                [
                    (lp.product_id, lp)
                    for lp in sorted(lab_products, key=lambda lp: (lp.lab.code, lp.pk))
                ]
            )
        ),
        zones=tuple(
            Zone(id=zone_id, countries=frozenset(countries), rest_of_world=rest_of_world)
            for zone_id, countries, rest_of_world in ShippingZone.objects.values_list(
                "id", "countries", "rest_of_world"
            )
        ),
        rates=MappingProxyType(
            _grouped([(rate.lab_id, rate) for rate in ShippingRate.objects.all()])
        ),
        units_per_base=MappingProxyType(units_per_base),
        tax_rules=MappingProxyType({rule.country_code: rule for rule in TaxRule.objects.all()}),
    )


class CatalogueCache:
    """The snapshot of one process (one instance per process; tests make more to stand in for
    other processes)."""

    def __init__(self) -> None:
        self._snapshot: CatalogueSnapshot | None = None
        self._lock = threading.Lock()

    def get(self) -> CatalogueSnapshot:
        version = catalogue_version()
        snapshot = self._snapshot
        if snapshot is not None and snapshot.version == version:
            return snapshot
        with self._lock:
            snapshot = self._snapshot
            if snapshot is None or snapshot.version != version:
                snapshot = catalogue_load(version=version)
                self._snapshot = snapshot
        return snapshot


_process_cache = CatalogueCache()


def catalogue_snapshot() -> CatalogueSnapshot:
    """The catalogue as of now: this process's snapshot, reloaded first if the version moved."""
    return _process_cache.get()
