"""Bar charts drawn on the server as SVG (no script, nothing fetched): the geometry here, the
drawing in ``templates/dashboard/_bar_chart.html``. Each chart carries the figures it draws as
rows, which the page also shows as a table (the text alternative)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from dashboard.selectors import AttentionCount, Day

WIDTH = 640
HEIGHT = 220
LEFT = 56  # room for the value axis's labels
RIGHT = 28  # room for the last date, centred under the last bar
BOTTOM = 28  # room for the dates
TOP = 12


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # what the bar is, with its value: the bar's own <title>


@dataclass(frozen=True)
class Tick:
    at: float  # y for the value axis, x for the dates
    text: str


@dataclass(frozen=True)
class BarChart:
    slug: str  # the ids of its title and description
    title: str
    description: str
    bars: list[Bar]
    value_ticks: list[Tick]
    label_ticks: list[Tick]
    rows: list[tuple[str, str]]  # (what, value) for the table
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT  # where the plot ends


def _scale_top(largest: Decimal) -> Decimal:
    """The axis's top: the smallest 1, 2 or 5 times a power of ten at or above ``largest``."""
    if largest <= 0:
        return Decimal(1)
    power = Decimal(1)
    while power * 10 <= largest:
        power *= 10
    while power > largest and power > Decimal("0.01"):
        power /= 10
    return next((power * step for step in (1, 2, 5) if power * step >= largest), power * 10)


def _number(value: Decimal, places: int) -> str:
    return f"{value:.{places}f}"


def day_chart(
    *,
    slug: str,
    title: str,
    days: Sequence[Day],
    value: Callable[[Day], Decimal],
    places: int,
    unit: str = "",
) -> BarChart:
    """One bar a day, oldest on the left; dates under every seventh bar."""
    values = [value(day) for day in days]
    top = _scale_top(max(values, default=Decimal(0)))
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT - RIGHT) / max(len(days), 1)
    suffix = f" {unit}" if unit else ""
    bars = []
    for index, (day, amount) in enumerate(zip(days, values, strict=True)):
        height = float(max(amount, Decimal(0)) / top) * plot_height
        bars.append(
            Bar(
                x=round(LEFT + index * slot + slot * 0.15, 2),
                y=round(HEIGHT - BOTTOM - height, 2),
                width=round(slot * 0.7, 2),
                height=round(height, 2),
                label=f"{day.day:%d %b}: {_number(amount, places)}{suffix}",
            )
        )
    step = Decimal(1).scaleb(-places)
    value_ticks = [
        Tick(round(HEIGHT - BOTTOM - plot_height * share, 2), _number(top * Decimal(share), places))
        for share in (0, 0.5, 1)
        if (top * Decimal(share)) % step == 0  # a half of 1 order is no tick
    ]
    label_ticks = [
        Tick(round(LEFT + index * slot + slot / 2, 2), f"{day.day:%d %b}")
        for index, day in enumerate(days)
        if (len(days) - 1 - index) % 7 == 0
    ]
    total = sum(values, Decimal(0))
    first, last = (days[0].day, days[-1].day) if days else (None, None)
    description = (
        f"{len(days)} bars, one a day from {first:%d %B} to {last:%d %B}; "
        f"{_number(total, places)}{suffix} in all, at most {_number(max(values), places)}"
        f"{suffix} in a day."
        if days
        else "No days."
    )
    rows = [
        (f"{day.day:%Y-%m-%d}", f"{_number(amount, places)}{suffix}")
        for day, amount in zip(days, values, strict=True)
    ]
    return BarChart(slug, title, description, bars, value_ticks, label_ticks, rows)


ROW_HEIGHT = 30
LABEL_WIDTH = 210


@dataclass(frozen=True)
class AttentionBar:
    y: float
    width: float
    count: int
    label: str
    query: str


@dataclass(frozen=True)
class AttentionChart:
    slug: str
    title: str
    description: str
    bars: list[AttentionBar]
    width: int = WIDTH
    height: int = 0
    left: int = LABEL_WIDTH


def attention_chart(*, counts: Sequence[AttentionCount]) -> AttentionChart:
    """One horizontal bar per reason an order needs the merchant, its count at its end."""
    largest = max((c.count for c in counts), default=0) or 1
    room = WIDTH - LABEL_WIDTH - 40
    bars = [
        AttentionBar(
            y=index * ROW_HEIGHT,
            width=round(room * count.count / largest, 2),
            count=count.count,
            label=count.label,
            query=count.query,
        )
        for index, count in enumerate(counts)
    ]
    description = "; ".join(f"{c.label}: {c.count}" for c in counts) + "."
    return AttentionChart(
        "attention-chart",
        "Orders needing your attention",
        description,
        bars,
        height=len(bars) * ROW_HEIGHT,
    )
