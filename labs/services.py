"""Writes for labs and the catalogue as a whole."""

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db import transaction

from labs import demo_catalogue as demo
from labs.connectors.siteflow import SITEFLOW_CAPABILITIES
from labs.models import (
    Connector,
    ExchangeRate,
    Lab,
    LabProduct,
    ShippingRate,
    ShippingZone,
    TaxRule,
)
from products.models import Category, Paper, PrintArea, Product, ProductAttribute, Variant


def _copied(spec: object, *names: str) -> dict[str, Any]:
    """The spec's values for the columns of the same names."""
    return {name: getattr(spec, name) for name in names}


def _product_load(spec: demo.ProductSpec) -> Product:
    product, _ = Product.objects.update_or_create(
        sku=spec.sku,
        defaults={
            **_copied(spec, "description", "category", "width", "height", "units"),
            **_copied(spec, "pages_included", "min_pages", "max_pages", "spine_base_mm"),
            "paper": Paper.objects.get(name=spec.paper) if spec.paper else None,
            "is_active": True,
        },
    )
    for attribute in spec.attributes:
        ProductAttribute.objects.update_or_create(
            product=product,
            name=attribute.name,
            defaults={
                "values": list(attribute.values),
                "required": attribute.required,
                "default": attribute.default,
            },
        )
    product.attributes.exclude(name__in=[a.name for a in spec.attributes]).delete()
    for name, required in spec.print_areas:
        PrintArea.objects.update_or_create(
            product=product, name=name, defaults={"required": required}
        )
    product.print_areas.exclude(name__in=[name for name, _ in spec.print_areas]).delete()
    existing = list(product.variants.all())
    kept: set[int] = set()
    for wanted in spec.variants():
        match = next((v for v in existing if v.attributes == wanted["attributes"]), None)
        if match is None:
            match = Variant(product=product, attributes=wanted["attributes"])
        match.print_area_sizes = wanted["sizes"]
        match.save()
        kept.add(match.pk)
    product.variants.exclude(pk__in=kept).delete()
    return product


def _demo_unit_cost(
    spec: demo.ProductSpec, lab: demo.LabSpec, units_per_gbp: Decimal
) -> tuple[Decimal, Decimal]:
    """(unit cost, extra page cost) in the lab's currency, from the per-category GBP prices."""
    base, rate = demo.CATEGORY_PRICES[Category(spec.category)]
    factor = lab.price_index * units_per_gbp
    if spec.category == Category.PHOTOBOOK:
        unit, per_page = base * factor, rate * factor
    else:
        unit, per_page = (base + spec.width_in * spec.height_in / 100 * rate) * factor, Decimal(0)
    return (
        unit.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP),
        per_page.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP),
    )


def _demo_lab_load(
    lab_spec: demo.LabSpec,
    products: dict[str, tuple[demo.ProductSpec, Product]],
    zones: dict[str, ShippingZone],
    units_per_gbp: dict[str, Decimal],
    **fields: Any,
) -> int:
    """One demo lab (with ``fields`` of its own) brought to the demo's values: the products of
    its categories among ``products`` at the demo's costs (with the lab's codes where the demo
    gives them), its shipping rates exactly; the number of its rates."""
    lab, _ = Lab.objects.update_or_create(
        code=lab_spec.code,
        defaults={
            **_copied(lab_spec, "name", "country_code", "currency", "capabilities"),
            "is_active": True,
            **fields,
        },
    )
    made = []
    for spec, product in products.values():
        if spec.category not in lab_spec.categories:
            continue
        unit_cost, page_cost = _demo_unit_cost(spec, lab_spec, units_per_gbp[lab.currency])
        codes = lab_spec.product_codes.get(spec.sku)
        LabProduct.objects.update_or_create(
            lab=lab,
            product=product,
            defaults={
                "unit_cost": unit_cost,
                "extra_page_cost": page_cost,
                "in_stock": spec.sku not in lab_spec.out_of_stock,
                **({"lab_sku": codes[0], "variant_codes": dict(codes[1])} if codes else {}),
            },
        )
        made.append(product.pk)
    lab.products.filter(product__sku__in=products).exclude(product__in=made).delete()
    kept = []
    for destination, method, price, carrier, service, low, high in lab_spec.rates:
        zone = zones.get(destination)
        shipping_rate, _ = ShippingRate.objects.update_or_create(
            lab=lab,
            method=method,
            country_code="" if zone else destination,
            zone=zone,
            defaults={
                "price": Decimal(price),
                "carrier_name": carrier,
                "carrier_service": service,
                "min_days": low,
                "max_days": high,
            },
        )
        kept.append(shipping_rate.pk)
    lab.shipping_rates.exclude(pk__in=kept).delete()
    return len(kept)


@transaction.atomic
def demo_catalogue_load() -> dict[str, int]:
    """Create or update the demo catalogue (``labs.demo_catalogue``); safe to re-run.

    Rows the demo defines are brought back to the demo's values; rows it does not define
    (added by staff) are left alone, except attributes, print areas, variants and shipping
    rates of demo products and labs, which are made to match the demo exactly.
    """
    for currency, units in demo.EXCHANGE_RATES.items():
        ExchangeRate.objects.update_or_create(currency=currency, defaults={"units_per_base": units})
    units_per_gbp = {ExchangeRate.BASE_CURRENCY: Decimal(1), **demo.EXCHANGE_RATES}
    for country, (name, tax_rate, shipping) in demo.TAX_RULES.items():
        TaxRule.objects.update_or_create(
            country_code=country,
            defaults={"name": name, "rate": tax_rate, "applies_to_shipping": shipping},
        )
    zones = {}
    for code, (name, countries, rest_of_world) in demo.ZONES.items():
        zones[code], _ = ShippingZone.objects.update_or_create(
            code=code,
            defaults={"name": name, "countries": countries, "rest_of_world": rest_of_world},
        )
    for name, thickness in demo.PAPERS.items():
        Paper.objects.update_or_create(name=name, defaults={"mm_per_page": thickness})
    products = {spec.sku: (spec, _product_load(spec)) for spec in demo.PRODUCTS}

    rate_count = 0
    for lab_spec in demo.LABS:
        rate_count += _demo_lab_load(
            lab_spec, products, zones, units_per_gbp, connector=Connector.SIMULATOR
        )
    return {
        "products": len(products),
        "labs": len(demo.LABS),
        "shipping_rates": rate_count,
        "exchange_rates": len(demo.EXCHANGE_RATES),
        "tax_rules": len(demo.TAX_RULES),
    }


@transaction.atomic
def siteflow_demo_lab_configure(*, base_url: str, token: str, secret: str, destination: str) -> Lab:
    """The demo Site Flow lab (``demo.SITEFLOW_DEMO_LAB``, ``sf1``) made or brought back to
    the demo's values and pointed at a Site Flow site (``make run``'s stand-in): active,
    connector ``siteflow`` with these settings and the demo's carrier aliases, the demo's photo
    prints with the lab's product and variant codes, its shipping rates. The demo catalogue
    must be loaded (``demo_catalogue_load``)."""
    spec = demo.SITEFLOW_DEMO_LAB
    zones = {zone.code: zone for zone in ShippingZone.objects.filter(code__in=demo.ZONES)}
    units_per_gbp = {ExchangeRate.BASE_CURRENCY: Decimal(1), **demo.EXCHANGE_RATES}
    products = {
        product.sku: (next(s for s in demo.PRODUCTS if s.sku == product.sku), product)
        for product in Product.objects.filter(sku__in=spec.product_codes)
    }
    _demo_lab_load(
        spec,
        products,
        zones,
        units_per_gbp,
        connector=Connector.SITEFLOW,
        siteflow_base_url=base_url,
        siteflow_token=token,
        siteflow_secret=secret,
        siteflow_destination=destination,
        siteflow_carrier_aliases=dict(demo.SITEFLOW_DEMO_CARRIER_ALIASES),
    )
    lab = Lab.objects.get(code=spec.code)
    lab.full_clean()
    return lab


def siteflow_demo_lab_deactivate() -> bool:
    """The demo Site Flow lab made inactive (no new work is allocated to it) where it is
    active; whether it was."""
    return bool(
        Lab.objects.filter(code=demo.SITEFLOW_DEMO_LAB.code, is_active=True).update(is_active=False)
    )


def lab_save(*, lab: Lab) -> Lab:
    """Save a lab as staff edited it. A Site Flow lab saved without capabilities gets every
    capability its connector supports (staff can then take some away)."""
    if lab.connector == Connector.SITEFLOW and not lab.capabilities:
        lab.capabilities = list(SITEFLOW_CAPABILITIES)
    lab.save()
    return lab


@transaction.atomic
def lab_connector_configure(
    *,
    lab: Lab,
    connector: str,
    base_url: str | None = None,
    token: str | None = None,
    secret: str | None = None,
    destination: str | None = None,
) -> Lab:
    """Switch ``lab`` to ``connector`` and set the Site Flow settings given (None keeps the
    current value). Raises ``ValidationError`` (nothing saved) when the result is incomplete,
    such as a Site Flow lab without base URL, token or secret."""
    lab.connector = connector
    for field, value in (
        ("siteflow_base_url", base_url),
        ("siteflow_token", token),
        ("siteflow_secret", secret),
        ("siteflow_destination", destination),
    ):
        if value is not None:
            setattr(lab, field, value)
    lab.full_clean()
    return lab_save(lab=lab)
