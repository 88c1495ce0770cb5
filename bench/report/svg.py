"""Inline SVG charts for the self-contained reports: histograms, horizontal bars, stacked bars, dot plots.  No scripts,
no external resources; every chart carries <title> tooltips with the exact numbers."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


def color(i: int) -> str:
    """The i-th color of the palette."""
    return PALETTE[i % len(PALETTE)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def histogram(
    bins: Sequence[tuple[str, int]],
    *,
    title: str,
    limit_after: int | None = None,
    width: int = 360,
    height: int = 150,
) -> str:
    """Vertical bars, one per bin; a dashed red line after bin `limit_after` marks the tolerance."""
    n = max(len(bins), 1)
    top = max([c for _, c in bins] + [1])
    left, bottom, head = 30, 34, 30
    bw = (width - left - 6) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" {FONT}>',
        f'<text x="{left}" y="12" font-weight="600">{escape(title)}</text>',
    ]
    plot_h = height - bottom - head
    for i, (label, count) in enumerate(bins):
        h = plot_h * count / top
        x = left + i * bw
        fill = "#d62728" if limit_after is not None and i > limit_after else "#4c78a8"
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{head + plot_h - h:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" '
            f'fill="{fill}"><title>{escape(label)}: {count}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{head + plot_h - h - 2:.1f}" text-anchor="middle">{count}</text>'
            )
        parts.append(
            f'<text x="{x + bw / 2:.1f}" y="{height - bottom + 12}" text-anchor="middle" '
            f'font-size="9">{escape(label)}</text>'
        )
    if limit_after is not None:
        x = left + (limit_after + 1) * bw
        parts.append(
            f'<line x1="{x:.1f}" y1="{head}" x2="{x:.1f}" y2="{head + plot_h}" stroke="#d62728" '
            f'stroke-dasharray="4 3"><title>tolerance</title></line>'
        )
    parts.append(f'<line x1="{left}" y1="{head + plot_h}" x2="{width - 4}" y2="{head + plot_h}" stroke="#999"/>')
    parts.append(f'<text x="{left}" y="{height - 4}" fill="#555">error / tolerance</text></svg>')
    return "".join(parts)


def _log_scale(values: Sequence[float], width: float) -> tuple[float, float, Callable[[float], float]]:
    positive = [v for v in values if v and v > 0 and math.isfinite(v)] or [1.0]
    lo = 10 ** math.floor(math.log10(min(positive)))
    hi = 10 ** math.ceil(math.log10(max(positive)))
    if hi <= lo:
        hi = lo * 10

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return width * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    return lo, hi, x


def _axis(
    parts: list[str],
    left: int,
    y: float,
    plot_w: float,
    lo: float,
    hi: float,
    x: Callable[[float], float],
    unit: str,
    top: float = 14,
) -> None:
    d = lo
    while d <= hi * 1.0001:
        px = left + x(d)
        parts.append(f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{px:.1f}" y="{y + 12:.1f}" text-anchor="middle" fill="#555">{_fmt(d)}</text>')
        d *= 10
    parts.append(
        f'<text x="{left + plot_w:.1f}" y="{y + 24:.1f}" text-anchor="end" fill="#555">{escape(unit)} '
        f"(log scale)</text>"
    )


def hbars(
    rows: Sequence[tuple[str, float, str]],
    *,
    title: str,
    unit: str = "ms",
    label_width: int = 230,
    width: int = 720,
    mark: float | None = None,
) -> str:
    """Horizontal bars on a log scale: (label, value, color) per row; `mark` draws a dashed line at that value
    (1 on a ratio chart: parity)."""
    bar, gap, head = 14, 4, 20
    height = head + len(rows) * (bar + gap) + 30
    plot_w = width - label_width - 60
    lo, hi, x = _log_scale([v for _, v, _ in rows], plot_w)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" {FONT}>',
        f'<text x="0" y="12" font-weight="600">{escape(title)}</text>',
    ]
    _axis(parts, label_width, head + len(rows) * (bar + gap), plot_w, lo, hi, x, unit)
    if mark is not None and lo <= mark <= hi:
        mx = label_width + x(mark)
        parts.append(
            f'<line x1="{mx:.1f}" y1="{head - 4}" x2="{mx:.1f}" y2="{head + len(rows) * (bar + gap)}" '
            f'stroke="#333" stroke-dasharray="4 3"><title>{_fmt(mark)}</title></line>'
        )
    for i, (label, value, fill) in enumerate(rows):
        y = head + i * (bar + gap)
        w = max(x(value), 1.0) if value and value > 0 else 0
        parts.append(f'<text x="{label_width - 6}" y="{y + bar - 3}" text-anchor="end">{escape(label)}</text>')
        parts.append(
            f'<rect x="{label_width}" y="{y}" width="{w:.1f}" height="{bar}" fill="{fill}">'
            f"<title>{escape(label)}: {_fmt(value)} {escape(unit)}</title></rect>"
        )
        parts.append(f'<text x="{label_width + w + 4:.1f}" y="{y + bar - 3}">{_fmt(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def dotplot(
    rows: Sequence[tuple[str, Mapping[str, float]]],
    series: Sequence[str],
    *,
    title: str,
    unit: str = "ms",
    label_width: int = 330,
    width: int = 860,
) -> str:
    """One row per label, one colored dot per series on a shared log axis; a legend on top."""
    step = 16
    legend: list[str] = []
    lx, ly = 0.0, 24.0
    for i, s in enumerate(series):  # the legend wraps onto as many lines as the width needs
        w = 18 + 7 * len(s)
        if lx and lx + w > width:
            lx, ly = 0.0, ly + 14
        legend.append(
            f'<circle cx="{lx + 5}" cy="{ly}" r="4" fill="{color(i)}"/><text x="{lx + 12}" y="{ly + 4}">'
            f"{escape(s)}</text>"
        )
        lx += w
    head = int(ly) + 10
    height = head + len(rows) * step + 30
    plot_w = width - label_width - 20
    lo, hi, x = _log_scale([v for _, vals in rows for v in vals.values()], plot_w)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" {FONT}>',
        f'<text x="0" y="12" font-weight="600">{escape(title)}</text>',
        *legend,
    ]
    _axis(parts, label_width, head + len(rows) * step, plot_w, lo, hi, x, unit, top=head - 4)
    for r, (label, vals) in enumerate(rows):
        y = head + r * step + step / 2
        short = label if len(label) <= 52 else label[:49] + "..."
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 4:.1f}" text-anchor="end"><title>{escape(label)}</title>'
            f"{escape(short)}</text>"
        )
        for i, s in enumerate(series):
            if s in vals and vals[s] and vals[s] > 0:
                parts.append(
                    f'<circle cx="{label_width + x(vals[s]):.1f}" cy="{y:.1f}" r="4" fill="{color(i)}" '
                    f'fill-opacity="0.8"><title>{escape(s)}: {_fmt(vals[s])} {escape(unit)}</title></circle>'
                )
    parts.append("</svg>")
    return "".join(parts)


def stacked(
    rows: Sequence[tuple[str, Sequence[float]]],
    segments: Sequence[str],
    *,
    title: str,
    unit: str = "ms",
    label_width: int = 230,
    width: int = 720,
) -> str:
    """Horizontal stacked bars on a linear scale: (label, one value per segment) per row; a legend on top."""
    bar, gap, head = 16, 5, 34
    height = head + len(rows) * (bar + gap) + 30
    plot_w = width - label_width - 70
    top = max([sum(v for v in vals if v > 0) for _, vals in rows] + [1e-9])
    step = 10 ** math.floor(math.log10(top))
    if top / step < 3:
        step /= 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" {FONT}>',
        f'<text x="0" y="12" font-weight="600">{escape(title)}</text>',
    ]
    lx = 0.0
    for i, s in enumerate(segments):
        parts.append(
            f'<rect x="{lx}" y="18" width="10" height="10" fill="{color(i)}"/>'
            f'<text x="{lx + 14}" y="27">{escape(s)}</text>'
        )
        lx += 24 + 6.5 * len(s)
    axis_y = head + len(rows) * (bar + gap)
    tick = 0.0
    while tick <= top * 1.0001:
        px = label_width + plot_w * tick / top
        parts.append(f'<line x1="{px:.1f}" y1="{head - 2}" x2="{px:.1f}" y2="{axis_y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{px:.1f}" y="{axis_y + 12:.1f}" text-anchor="middle" fill="#555">{_fmt(tick)}</text>')
        tick += step
    parts.append(f'<text x="{label_width + plot_w:.1f}" y="{axis_y + 24:.1f}" text-anchor="end" fill="#555">'
                 f"{escape(unit)}</text>")
    for r, (label, vals) in enumerate(rows):
        y = head + r * (bar + gap)
        parts.append(f'<text x="{label_width - 6}" y="{y + bar - 4}" text-anchor="end">{escape(label)}</text>')
        x0 = float(label_width)
        for i, v in enumerate(vals):
            if not v or v <= 0:
                continue
            w = plot_w * v / top
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{w:.1f}" height="{bar}" fill="{color(i)}">'
                f"<title>{escape(label)}: {escape(segments[i])} {_fmt(v)} {escape(unit)}</title></rect>"
            )
            x0 += w
        parts.append(f'<text x="{x0 + 4:.1f}" y="{y + bar - 4}">{_fmt(sum(v for v in vals if v > 0))}</text>')
    parts.append("</svg>")
    return "".join(parts)
