# ruff: noqa: E501  (a data table reads best one row per line)
"""The demo catalogue that ``manage.py load_catalogue`` loads: products, labs, shipping, money.

Prices are written once per category in GBP (a base price plus a price per 100 square inches of
print) and each lab applies its own price index and currency, so the labs compete on price the
way real ones do. Photobooks are made only by book labs and framed prints only by frame labs,
so a basket holding both always ships in two parcels.
"""

from dataclasses import dataclass, field
from decimal import Decimal
from itertools import product as cartesian

from labs.capabilities import CAPABILITIES
from products.models import PRINT_DPI, Category

MM_PER_INCH = Decimal("25.4")
DPI = PRINT_DPI


@dataclass(frozen=True)
class AttributeSpec:
    name: str
    values: tuple[str, ...]
    required: bool = True
    default: str = ""


@dataclass(frozen=True)
class ProductSpec:
    sku: str
    description: str
    category: str
    width: Decimal
    height: Decimal
    units: str = "in"
    attributes: tuple[AttributeSpec, ...] = ()
    # name -> required
    print_areas: tuple[tuple[str, bool], ...] = (("default", True),)
    pages_included: int | None = None
    min_pages: int | None = None
    max_pages: int | None = None
    paper: str | None = None
    spine_base_mm: Decimal | None = None

    @property
    def width_in(self) -> Decimal:
        return self.width if self.units == "in" else self.width / MM_PER_INCH

    @property
    def height_in(self) -> Decimal:
        return self.height if self.units == "in" else self.height / MM_PER_INCH

    def variants(self) -> list[dict[str, object]]:
        """Every combination of attribute values, with recommended pixels per print area."""
        names = [a.name for a in self.attributes]
        combos = cartesian(*(a.values for a in self.attributes)) if names else [()]
        return [
            {"attributes": dict(zip(names, combo, strict=True)), "sizes": self._sizes(combo)}
            for combo in combos
        ]

    def _sizes(self, combo: tuple[str, ...]) -> dict[str, dict[str, int]]:
        width, height = self.width_in, self.height_in
        if "ImageWrap" in combo:  # the picture continues round a 1.25 in stretcher edge
            width, height = width + Decimal("2.5"), height + Decimal("2.5")
        sizes = {}
        for area, _ in self.print_areas:
            w, h = width, height
            if area == "spine":
                w = (self.spine_base_mm or 0) / MM_PER_INCH + Decimal("0.4")
            elif area == "lid":
                w, h = Decimal("10"), Decimal("7")
            elif area == "inside":
                w, h = width, height
            sizes[area] = {
                "horizontalResolution": int(w * DPI),
                "verticalResolution": int(h * DPI),
            }
        return sizes


FINISH = AttributeSpec("finish", ("gloss", "lustre", "matte"), required=False, default="lustre")
WRAP = AttributeSpec("wrap", ("Black", "ImageWrap", "MirrorWrap", "White"))
FRAME_COLOUR = AttributeSpec("color", ("black", "white", "natural", "brown", "gold"))
PAPER = AttributeSpec(
    "paperType", ("Photo Rag", "German Etching"), required=False, default="Photo Rag"
)


def _sized(
    category: str,
    code: str,
    description: str,
    attribute: AttributeSpec,
    sizes: list[tuple[int, int]],
) -> tuple[ProductSpec, ...]:
    """One product per size in inches: SKU ``GLOBAL-<code>-<w>X<h>``, ``description`` with
    ``{w}`` and ``{h}`` filled in."""
    return tuple(
        ProductSpec(f"GLOBAL-{code}-{w}X{h}", description.format(w=w, h=h), category,
                    Decimal(w), Decimal(h), attributes=(attribute,))
        for w, h in sizes
    )  # fmt: skip


def _book(sku: str, description: str, w: int, h: int, *, hard: bool, paper: str) -> ProductSpec:
    return ProductSpec(
        sku,
        description,
        Category.PHOTOBOOK,
        Decimal(w),
        Decimal(h),
        units="mm",
        print_areas=(("default", True), ("spine", False)),
        pages_included=24,
        min_pages=24,
        max_pages=200 if hard else 100,
        paper=paper,
        spine_base_mm=Decimal("6.00") if hard else Decimal("1.00"),
    )


def _poster(size: str, w: int, h: int) -> ProductSpec:
    return ProductSpec(
        f"GLOBAL-POSTER-{size}",
        f"Poster, {size} ({w}x{h} mm) on 200gsm silk paper",
        Category.POSTER,
        Decimal(w),
        Decimal(h),
        units="mm",
    )


PRODUCTS: tuple[ProductSpec, ...] = (
    *_sized(Category.FINE_ART, "FAP", 'Fine-art giclée print, {w}x{h}" on archival cotton rag', PAPER,
            [(8, 10), (10, 10), (11, 14), (12, 16), (16, 20), (16, 24), (20, 30)]),
    *_sized(Category.PHOTO, "PHO", 'Photo print, {w}x{h}" on professional photo paper', FINISH,
            [(4, 6), (5, 7), (6, 8), (8, 10)]),
    *_sized(Category.CANVAS, "CAN", 'Stretched canvas, {w}x{h}" on a 38 mm frame', WRAP,
            [(10, 10), (12, 16), (16, 20), (20, 30)]),
    *_sized(Category.FRAMED, "CFPM", 'Classic framed print with mount, {w}x{h}"', FRAME_COLOUR,
            [(12, 16), (16, 20), (20, 30)]),
    _book("BOOK-A4-L-HARD-M", "Hardcover photobook, A4 landscape, matte pages", 297, 210, hard=True, paper="Matte 170gsm"),
    _book("BOOK-A4-P-HARD-M", "Hardcover photobook, A4 portrait, matte pages", 210, 297, hard=True, paper="Matte 170gsm"),
    _book("BOOK-20X20-HARD-G", "Hardcover photobook, 20x20 cm, gloss pages", 200, 200, hard=True, paper="Gloss 200gsm"),
    _book("BOOK-A5-L-SOFT-G", "Softcover photobook, A5 landscape, gloss pages", 210, 148, hard=False, paper="Gloss 200gsm"),
    ProductSpec("JIGSAW-PUZZLE-500", "500-piece jigsaw puzzle in a printed box", Category.JIGSAW,
                Decimal(20), Decimal(14), print_areas=(("default", True), ("lid", False))),
    ProductSpec("JIGSAW-PUZZLE-1000", "1000-piece jigsaw puzzle in a printed box", Category.JIGSAW,
                Decimal(27), Decimal(20), print_areas=(("default", True), ("lid", False))),
    _poster("A3", 297, 420),
    _poster("A2", 420, 594),
    _poster("A1", 594, 841),
    ProductSpec("GLOBAL-GRE-5X7", 'Folded greeting card, 5x7" with envelope', Category.GREETING_CARD,
                Decimal(5), Decimal(7), print_areas=(("default", True), ("inside", False))),
    ProductSpec("GLOBAL-GRE-A6", "Flat greeting card, A6 (105x148 mm) with envelope",
                Category.GREETING_CARD, Decimal(105), Decimal(148), units="mm"),
)  # fmt: skip

# Spine thickness each page adds (a leaf is two pages).
PAPERS = {"Matte 170gsm": Decimal("0.0900"), "Gloss 200gsm": Decimal("0.1100")}

# GBP: (base price, price per 100 square inches); photobooks: (book of 24 pages, per extra page).
CATEGORY_PRICES = {
    Category.FINE_ART: (Decimal("3.50"), Decimal("2.40")),
    Category.PHOTO: (Decimal("0.30"), Decimal("1.10")),
    Category.CANVAS: (Decimal("9.00"), Decimal("5.50")),
    Category.FRAMED: (Decimal("16.00"), Decimal("7.50")),
    Category.PHOTOBOOK: (Decimal("14.00"), Decimal("0.28")),
    Category.JIGSAW: (Decimal("11.00"), Decimal("1.50")),
    Category.POSTER: (Decimal("2.00"), Decimal("0.90")),
    Category.GREETING_CARD: (Decimal("0.90"), Decimal("2.00")),
}


@dataclass(frozen=True)
class LabSpec:
    code: str
    name: str
    country_code: str
    currency: str
    categories: tuple[str, ...]
    price_index: Decimal
    capabilities: list[str] = field(default_factory=lambda: list(CAPABILITIES))
    # (destination country or zone code, method, price in lab currency, carrier, service,
    #  min days, max days)
    rates: tuple[tuple[str, str, str, str, str, int, int], ...] = ()
    out_of_stock: tuple[str, ...] = ()
    # SKU -> (the lab's product code, the lab's codes per variant): what a Site Flow lab
    # calls the product (labs.variant_codes); the simulator labs have none.
    product_codes: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)


PRINTS = (Category.FINE_ART, Category.PHOTO, Category.POSTER, Category.CANVAS)

LABS: tuple[LabSpec, ...] = (
    LabSpec("gb1", "London Print Works", "GB", "GBP",
            (*PRINTS, Category.JIGSAW, Category.GREETING_CARD), Decimal("1.00"),
            rates=(
                ("GB", "Budget", "2.95", "Royal Mail", "Tracked 48", 2, 4),
                ("GB", "Standard", "3.95", "Royal Mail", "Tracked 48", 2, 3),
                ("GB", "StandardPlus", "4.95", "Royal Mail", "Tracked 24", 1, 2),
                ("GB", "Express", "7.95", "DPD", "Next Day", 1, 1),
                ("GB", "Overnight", "12.50", "Royal Mail", "Special Delivery Guaranteed by 1pm", 1, 1),
                ("EU", "Budget", "6.50", "Royal Mail", "International Standard", 5, 10),
                ("EU", "Standard", "8.50", "Royal Mail", "International Tracked", 4, 7),
                ("EU", "Express", "16.00", "DHL Express", "Worldwide", 2, 3),
                ("ROW", "Standard", "12.00", "Royal Mail", "International Tracked", 6, 14),
                ("ROW", "Express", "28.00", "DHL Express", "Worldwide", 3, 5),
            )),
    LabSpec("gb2", "Midlands Framing Co", "GB", "GBP", (Category.FRAMED, Category.CANVAS),
            Decimal("0.96"), capabilities=["cancel", "updateAddress"],
            rates=(
                ("GB", "Budget", "5.95", "Evri", "Standard", 3, 5),
                ("GB", "Standard", "6.95", "DPD", "Two Day", 2, 3),
                ("GB", "Express", "9.95", "DPD", "Next Day", 1, 1),
                ("EU", "Standard", "18.00", "DPD", "Classic Europe", 4, 7),
                ("EU", "Express", "29.00", "DHL Express", "Worldwide", 2, 3),
                ("ROW", "Express", "45.00", "DHL Express", "Worldwide", 3, 6),
            )),
    LabSpec("gb3", "Bristol Bindery", "GB", "GBP", (Category.PHOTOBOOK,), Decimal("1.00"),
            capabilities=["cancel", "hold", "unhold"],
            rates=(
                ("GB", "Budget", "2.95", "Royal Mail", "Tracked 48", 3, 5),
                ("GB", "Standard", "3.95", "Royal Mail", "Tracked 48", 2, 4),
                ("GB", "Express", "7.50", "DPD", "Next Day", 1, 1),
                ("EU", "Standard", "9.00", "Royal Mail", "International Tracked", 4, 8),
                ("ROW", "Standard", "13.00", "Royal Mail", "International Tracked", 6, 14),
                ("ROW", "Express", "30.00", "DHL Express", "Worldwide", 3, 5),
            )),
    LabSpec("us1", "Brooklyn Print Studio", "US", "USD",
            (*PRINTS, Category.JIGSAW, Category.GREETING_CARD), Decimal("0.97"),
            rates=(
                ("US", "Budget", "4.50", "USPS", "Ground Advantage", 3, 6),
                ("US", "Standard", "5.99", "USPS", "Priority Mail", 2, 4),
                ("US", "StandardPlus", "8.99", "UPS", "2nd Day Air", 2, 2),
                ("US", "Express", "14.99", "UPS", "Next Day Air Saver", 1, 1),
                ("US", "Overnight", "24.99", "FedEx", "Priority Overnight", 1, 1),
                ("CA", "Standard", "12.99", "USPS", "Priority Mail International", 5, 9),
                ("CA", "Express", "29.99", "UPS", "Worldwide Express", 2, 3),
                ("ROW", "Standard", "16.99", "USPS", "Priority Mail International", 7, 15),
                ("ROW", "Express", "39.99", "DHL Express", "Worldwide", 3, 5),
            )),
    LabSpec("us2", "Ohio Frame Works", "US", "USD", (Category.FRAMED, Category.CANVAS),
            Decimal("0.93"), capabilities=["cancel", "hold", "unhold", "updateAddress"],
            rates=(
                ("US", "Budget", "7.99", "FedEx", "Ground Economy", 4, 7),
                ("US", "Standard", "9.99", "UPS", "Ground", 3, 5),
                ("US", "Express", "24.99", "UPS", "Next Day Air", 1, 1),
                ("CA", "Standard", "24.99", "UPS", "Standard to Canada", 4, 8),
            )),
    LabSpec("us3", "Nashville Book Company", "US", "USD", (Category.PHOTOBOOK,), Decimal("0.95"),
            rates=(
                ("US", "Budget", "4.99", "USPS", "Ground Advantage", 3, 6),
                ("US", "Standard", "6.49", "USPS", "Priority Mail", 2, 4),
                ("US", "Express", "15.99", "UPS", "Next Day Air Saver", 1, 1),
                ("CA", "Standard", "13.99", "USPS", "Priority Mail International", 5, 9),
                ("OCEANIA", "Standard", "24.99", "USPS", "Priority Mail International", 8, 16),
            )),
    LabSpec("au1", "Sydney Print Hub", "AU", "AUD", (*PRINTS, Category.FRAMED), Decimal("1.05"),
            capabilities=["cancel", "updateAddress", "updateShippingMethod"],
            rates=(
                ("AU", "Budget", "7.95", "Australia Post", "Parcel Post", 3, 7),
                ("AU", "Standard", "9.95", "Australia Post", "Parcel Post", 2, 5),
                ("AU", "Express", "16.95", "Australia Post", "Express Post", 1, 2),
                ("OCEANIA", "Standard", "19.95", "Australia Post", "International Standard", 4, 8),
                ("OCEANIA", "Express", "39.95", "DHL Express", "Worldwide", 2, 4),
            )),
    LabSpec("de1", "Berliner Druckhaus", "DE", "EUR",
            (*PRINTS, Category.FRAMED, Category.JIGSAW), Decimal("0.98"),
            rates=(
                ("DE", "Budget", "3.49", "Deutsche Post", "Warenpost", 2, 4),
                ("DE", "Standard", "4.99", "DHL", "Paket", 1, 3),
                ("DE", "StandardPlus", "6.99", "DHL", "Paket Prio", 1, 2),
                ("DE", "Express", "11.99", "DHL Express", "Domestic Express", 1, 1),
                ("DE", "Overnight", "19.99", "DHL Express", "Express 9:00", 1, 1),
                ("EU", "Budget", "6.99", "Deutsche Post", "Warenpost International", 4, 8),
                ("EU", "Standard", "8.99", "DHL", "Paket International", 3, 6),
                ("EU", "StandardPlus", "11.99", "GLS", "EuroBusinessParcel", 2, 4),
                ("EU", "Express", "19.99", "DHL Express", "Worldwide", 1, 2),
                ("GB", "Standard", "10.99", "DHL", "Paket International", 4, 7),
                ("ROW", "Standard", "17.99", "DHL", "Paket International", 6, 14),
            )),
    LabSpec("nl1", "Amsterdam Boekbinderij", "NL", "EUR", (Category.PHOTOBOOK,), Decimal("0.97"),
            capabilities=["cancel", "hold", "unhold", "updateAddress"],
            rates=(
                ("NL", "Budget", "3.95", "PostNL", "Brievenbuspakje", 2, 4),
                ("NL", "Standard", "4.95", "PostNL", "Pakket", 1, 2),
                ("NL", "Express", "9.95", "DHL Express", "Domestic Express", 1, 1),
                ("EU", "Budget", "7.95", "PostNL", "International Packet", 4, 8),
                ("EU", "Standard", "9.95", "PostNL", "Pakket Europa", 3, 6),
                ("EU", "Express", "21.95", "DHL Express", "Worldwide", 1, 2),
                ("GB", "Standard", "11.95", "PostNL", "Pakket International", 4, 7),
            )),
    LabSpec("ca1", "Toronto Print Co", "CA", "CAD", (*PRINTS, Category.GREETING_CARD),
            Decimal("1.02"), capabilities=["cancel", "updateAddress"],
            rates=(
                ("CA", "Budget", "8.99", "Canada Post", "Regular Parcel", 4, 8),
                ("CA", "Standard", "11.99", "Canada Post", "Expedited Parcel", 2, 5),
                ("CA", "Express", "19.99", "Canada Post", "Xpresspost", 1, 2),
                ("CA", "Overnight", "34.99", "Canada Post", "Priority", 1, 1),
                ("US", "Standard", "15.99", "Canada Post", "Tracked Packet USA", 4, 7),
                ("US", "Express", "32.99", "Purolator", "Express U.S.", 2, 3),
            )),
)  # fmt: skip

# The demo Site Flow lab: a lab at make run's Site Flow stand-in (labs/siteflow_standin.py),
# made by `setup_demo` only when the stand-in runs (SITEFLOW_STANDIN=1), and made inactive
# when it does not; load_catalogue leaves it alone. It makes the photo prints a little cheaper
# than gb1, so a Live order of one to the UK goes to it (and, by the same price, a Sandbox one,
# which the simulator makes as it makes every Sandbox order).
SITEFLOW_DEMO_LAB = LabSpec(
    "sf1", "Site Flow demo lab (local stand-in)", "GB", "GBP", (Category.PHOTO,), Decimal("0.90"),
    rates=(
        ("GB", "Budget", "2.95", "Royal Mail", "Tracked 48", 2, 4),
        ("GB", "Standard", "3.95", "Royal Mail", "Tracked 48", 2, 3),
        ("GB", "StandardPlus", "4.95", "Royal Mail", "Tracked 24", 1, 2),
        ("GB", "Express", "7.95", "DPD", "Next Day", 1, 1),
        ("EU", "Standard", "8.50", "Royal Mail", "International Tracked", 4, 7),
    ),
    product_codes={
        spec.sku: (
            f"PHOTO-{spec.sku.rsplit('-', 1)[1]}",
            {f"finish={finish}": f"PHOTO-{spec.sku.rsplit('-', 1)[1]}-{finish.upper()}"
             for finish in ("gloss", "matte")},
        )
        for spec in PRODUCTS if spec.category == Category.PHOTO
    },
)  # fmt: skip
# The site's carrier alias for each of the demo Site Flow lab's shipping methods.
SITEFLOW_DEMO_CARRIER_ALIASES = {
    "Budget": "royalmail-48",
    "Standard": "royalmail-48",
    "StandardPlus": "royalmail-24",
    "Express": "dpd-next-day",
}

EU = "AT BE BG HR CY CZ DK EE FI FR DE GR HU IE IT LV LT LU MT NL PL PT RO SK SI ES SE".split()  # noqa: SIM905

ZONES = {
    "EU": ("European Union", EU, False),
    "OCEANIA": ("Australia and Oceania", ["AU", "NZ", "FJ", "PG"], False),
    "ROW": ("Rest of the world", [], True),
}

# Units of each currency that one GBP buys.
EXCHANGE_RATES = {
    "USD": Decimal("1.270000"),
    "EUR": Decimal("1.170000"),
    "AUD": Decimal("1.930000"),
    "CAD": Decimal("1.740000"),
    "NZD": Decimal("2.100000"),
    "CHF": Decimal("1.120000"),
    "SEK": Decimal("13.600000"),
    "JPY": Decimal("190.000000"),
}

# Country: (tax name, rate, whether shipping is taxed). The US has none: see the quote warning.
TAX_RULES = {
    "GB": ("VAT", Decimal("0.2000"), True),
    "DE": ("MwSt", Decimal("0.1900"), True),
    "NL": ("BTW", Decimal("0.2100"), True),
    "FR": ("TVA", Decimal("0.2000"), True),
    "IE": ("VAT", Decimal("0.2300"), True),
    "IT": ("IVA", Decimal("0.2200"), True),
    "ES": ("IVA", Decimal("0.2100"), True),
    "AU": ("GST", Decimal("0.1000"), True),
    "NZ": ("GST", Decimal("0.1500"), True),
    "CA": ("GST", Decimal("0.0500"), True),
}
