"""Horizontal bar charts for the HTML report, drawn as inline SVG by its template.

No script and no remote asset: the geometry is computed here, the template writes `<rect>` and
`<text>` elements with it, so the page's Content-Security-Policy (no script, inline style only)
stays as it is. One chart type serves both the bytes per namespace and the orphans by age.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

LABEL_CHARS = 32  # a longer label is cut in the chart (the tables show it whole)
BAR_COLOUR = "#2f6db5"  # a test finds this colour's pixels in a screenshot


@dataclass(frozen=True)
class Bar:
    label: str  # as drawn (cut to LABEL_CHARS)
    value: int
    text: str  # the value as shown at the bar's end
    y: int
    width: float


@dataclass(frozen=True)
class BarChart:
    description: str  # the chart's accessible name (aria-label)
    bars: tuple[Bar, ...]
    width: int = 760
    label_width: int = 240
    value_width: int = 150
    bar_height: int = 20
    gap: int = 6
    colour: str = BAR_COLOUR

    @property
    def height(self) -> int:
        return len(self.bars) * (self.bar_height + self.gap) + self.gap

    @property
    def plot_width(self) -> int:
        return self.width - self.label_width - self.value_width


def _cut(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def bar_chart(
    description: str, items: Sequence[tuple[str, int]], shown: Callable[[int], str]
) -> BarChart | None:
    """A bar for each (label, value), lengths proportional to the largest; None when every
    value is zero (the section then says there is nothing to draw)."""
    chart = BarChart(description, ())
    largest = max((value for _, value in items), default=0)
    if largest <= 0:
        return None
    bars = []
    for index, (label, value) in enumerate(items):
        width = chart.plot_width * value / largest
        bars.append(
            Bar(
                label=_cut(label),
                value=value,
                text=shown(value),
                y=chart.gap + index * (chart.bar_height + chart.gap),
                width=round(max(width, 2.0) if value > 0 else 0.0, 1),  # a sliver stays visible
            )
        )
    return BarChart(description, tuple(bars))
