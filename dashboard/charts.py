"""The overview's charts (``common.charts`` draws them): orders and spend a day, the orders
needing the merchant by why."""

from collections.abc import Callable, Sequence
from decimal import Decimal

from django.urls import reverse

from common.charts import BarChart, Point, Row, RowChart, bar_chart, number_text, row_chart
from dashboard.selectors import AttentionCount, Day


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
    suffix = f" {unit}" if unit else ""
    points = [
        Point(
            amount,
            bar=f"{day.day:%d %b}",
            row=f"{day.day:%Y-%m-%d}",
            tick=f"{day.day:%d %b}" if (len(days) - 1 - index) % 7 == 0 else "",
        )
        for index, (day, amount) in enumerate(zip(days, values, strict=True))
    ]
    total = sum(values, Decimal(0))
    description = (
        f"{len(days)} bars, one a day from {days[0].day:%d %B} to {days[-1].day:%d %B}; "
        f"{number_text(total, places)}{suffix} in all, at most "
        f"{number_text(max(values), places)}{suffix} in a day."
        if days
        else "No days."
    )
    return bar_chart(
        slug=slug,
        title=title,
        description=description,
        points=points,
        places=places,
        label_heading="Day",
        unit=unit,
    )


def attention_chart(*, counts: Sequence[AttentionCount]) -> RowChart:
    """One horizontal bar per reason an order needs the merchant, its count at its end, each a
    link to the orders list filtered to them."""
    orders = reverse("dashboard:orders")
    return row_chart(
        slug="attention-chart",
        title="Orders needing your attention",
        rows=[Row(c.label, Decimal(c.count), href=f"{orders}?{c.query}") for c in counts],
    )
