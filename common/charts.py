"""Charts drawn on the server as SVG (no script, nothing fetched): the geometry here, the
drawing in ``templates/charts/`` (``bar_chart.html``: a figure with its SVG and its figures as a
table; ``row_chart_svg.html``: the SVG of a row chart, beside which its page shows the rows).
Each chart carries the figures it draws, which its page also shows as text (the text
alternative). Used by the merchant dashboard (``dashboard.charts``) and the admin's overview
(``backoffice.overview``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

WIDTH = 640
HEIGHT = 220
LEFT = 56  # room for the value axis's labels
RIGHT = 28  # room for the last label, centred under the last bar
BOTTOM = 28  # room for the labels under the bars
TOP = 12
ROW_HEIGHT = 30
LABEL_WIDTH = 210


@dataclass(frozen=True)
class Point:
    """One bar of a bar chart: its value, what it is (its own title, ``bar``, and its row of
    the table, ``row``) and, when not empty, the label drawn under it (``tick``)."""

    value: Decimal
    bar: str
    row: str
    tick: str = ""


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # what the bar is, with its value: the bar's own <title>


@dataclass(frozen=True)
class Tick:
    at: float  # y for the value axis, x for the labels under the bars
    text: str


@dataclass(frozen=True)
class BarChart:
    slug: str  # the figure's id and the ids of its title and description
    title: str
    description: str
    bars: list[Bar]
    value_ticks: list[Tick]
    label_ticks: list[Tick]
    rows: list[tuple[str, str]]  # (what, value) for the table
    label_heading: str  # the table's heading of what each row is
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT  # where the plot ends


def scale_top(largest: Decimal) -> Decimal:
    """The axis's top: the smallest 1, 2 or 5 times a power of ten at or above ``largest``."""
    if largest <= 0:
        return Decimal(1)
    power = Decimal(1)
    while power * 10 <= largest:
        power *= 10
    while power > largest and power > Decimal("0.01"):
        power /= 10
    return next((power * step for step in (1, 2, 5) if power * step >= largest), power * 10)


def number_text(value: Decimal, places: int) -> str:
    return f"{value:.{places}f}"


def bar_chart(
    *,
    slug: str,
    title: str,
    description: str,
    points: Sequence[Point],
    places: int,
    label_heading: str,
    unit: str = "",
) -> BarChart:
    """One bar a point, first on the left, on a scale from 0 to ``scale_top`` of the largest;
    values shown with ``places`` decimals (and ``unit``)."""
    top = scale_top(max((point.value for point in points), default=Decimal(0)))
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT - RIGHT) / max(len(points), 1)
    suffix = f" {unit}" if unit else ""
    bars = []
    for index, point in enumerate(points):
        height = float(max(point.value, Decimal(0)) / top) * plot_height
        bars.append(
            Bar(
                x=round(LEFT + index * slot + slot * 0.15, 2),
                y=round(HEIGHT - BOTTOM - height, 2),
                width=round(slot * 0.7, 2),
                height=round(height, 2),
                label=f"{point.bar}: {number_text(point.value, places)}{suffix}",
            )
        )
    step = Decimal(1).scaleb(-places)
    value_ticks = [
        Tick(
            round(HEIGHT - BOTTOM - plot_height * share, 2),
            number_text(top * Decimal(share), places),
        )
        for share in (0, 0.5, 1)
        if (top * Decimal(share)) % step == 0  # a half of 1 order is no tick
    ]
    label_ticks = [
        Tick(round(LEFT + index * slot + slot / 2, 2), point.tick)
        for index, point in enumerate(points)
        if point.tick
    ]
    rows = [(point.row, f"{number_text(point.value, places)}{suffix}") for point in points]
    return BarChart(slug, title, description, bars, value_ticks, label_ticks, rows, label_heading)


@dataclass(frozen=True)
class Row:
    """One row of a row chart: what it is, its value, its value in words (``text``, else the
    number) and the page that lists what it counts (``href``, none if empty)."""

    label: str
    value: Decimal
    text: str = ""
    href: str = ""


@dataclass(frozen=True)
class RowBar:
    y: float
    width: float
    label: str
    text: str  # the value as shown at the bar's end
    href: str
    value: Decimal


@dataclass(frozen=True)
class RowChart:
    slug: str
    title: str
    description: str
    bars: list[RowBar]
    width: int = WIDTH
    height: int = 0
    left: int = LABEL_WIDTH


def row_chart(
    *,
    slug: str,
    title: str,
    rows: Sequence[Row],
    places: int = 0,
    label_width: int = LABEL_WIDTH,
) -> RowChart:
    """One horizontal bar a row, the longest the largest value, its value at its end; the
    labels in the ``label_width`` before the bars."""
    largest = max((row.value for row in rows), default=Decimal(0))
    largest = largest if largest > 0 else Decimal(1)
    room = WIDTH - label_width - 56
    bars = [
        RowBar(
            y=index * ROW_HEIGHT,
            width=round(float(room * max(row.value, Decimal(0)) / largest), 2),
            label=row.label,
            text=row.text or number_text(row.value, places),
            href=row.href,
            value=row.value,
        )
        for index, row in enumerate(rows)
    ]
    description = "; ".join(f"{bar.label}: {bar.text}" for bar in bars) + "."
    return RowChart(slug, title, description, bars, height=len(bars) * ROW_HEIGHT, left=label_width)
