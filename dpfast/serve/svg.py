"""Hand-written SVG plots for the dashboard (no JavaScript, no external asset).

Every plotted value is also written into the element as a ``data-*`` attribute (the
number as JSON writes it), so what a plot shows can be checked against the API.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["errorbars", "loglog", "steps"]

W, H = 560, 260
L, R, T, B = 60, 150, 20, 40
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


def _a(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _num(v: float) -> str:
    return repr(float(v))


def _scale(lo: float, hi: float, a: float, b: float) -> Any:
    if not hi > lo:
        hi = lo + 1.0
    return lambda v: a + (v - lo) / (hi - lo) * (b - a)


def _frame(title: str, body: list[str], xlabel: str, ylabel: str, ylo: float, yhi: float,
           cls: str, log: bool = False) -> str:
    y = _scale(ylo, yhi, H - B, T)
    ticks = []
    for i in range(5):
        v = ylo + (yhi - ylo) * i / 4
        label = f"{10 ** v:.3g}" if log else f"{v:.3g}"
        ticks.append(f'<line x1="{L - 4}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#ddd"/><text x="{L - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end" font-size="10">{label}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" width="{W}" '
            f'height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{_a(title)}</title>'
            f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="white" '
            f'stroke="#999"/>{"".join(ticks)}'
            f'<text x="{(L + W - R) / 2}" y="{H - 8}" text-anchor="middle" '
            f'font-size="11">{_a(xlabel)}</text>'
            f'<text x="14" y="{(T + H - B) / 2}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 14 {(T + H - B) / 2})">{_a(ylabel)}</text>'
            + "".join(body) + "</svg>")


def steps(series: dict[str, tuple[list[float], list[float]]], caps: dict[str, float],
          *, title: str, ylabel: str) -> str:
    """Step curves (x: seconds since the first point) per name, each with its cap as a
    dashed line of the same colour; ``data-name``, ``data-last`` and ``data-cap``."""
    xs = [x for t, _ in series.values() for x in t] or [0.0]
    ys = [y for _, vs in series.values() for y in vs] + list(caps.values()) + [0.0]
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1.0
    ytop = max(ys) * 1.05 or 1.0
    x = _scale(x0, x1, L, W - R)
    y = _scale(0.0, ytop, H - B, T)
    body = []
    for i, name in enumerate(sorted(set(series) | set(caps))):
        c = _COLOURS[i % len(_COLOURS)]
        t, v = series.get(name, ([], []))
        last = v[-1] if v else 0.0
        pts = [(x(t[0]) if t else L, y(0.0))]
        for tj, vj in zip(t, v):
            pts.append((x(tj), pts[-1][1]))
            pts.append((x(tj), y(vj)))
        pts.append((W - R, pts[-1][1]))
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        cap = caps.get(name)
        body.append(f'<g class="series" data-name="{_a(name)}" data-last="{_num(last)}"'
                    + (f' data-cap="{_num(cap)}"' if cap is not None else "") + ">"
                    f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{path}"/>')
        if cap is not None:
            body.append(f'<line x1="{L}" x2="{W - R}" y1="{y(cap):.1f}" y2="{y(cap):.1f}" '
                        f'stroke="{c}" stroke-dasharray="5,4"/>')
        body.append(f'<text x="{W - R + 6}" y="{T + 14 * (i + 1)}" font-size="11" '
                    f'fill="{c}">{_a(name)}: {last:.4g}'
                    + (f" / {cap:.4g}" if cap is not None else "") + "</text></g>")
    return _frame(title, body, "time since the first charge (s)", ylabel, 0.0, ytop, "steps")


def errorbars(labels: Sequence[Any], values: Sequence[float | None],
              low: Sequence[float | None], high: Sequence[float | None], *, title: str,
              ylabel: str) -> str:
    """Points with error bars, one per label; ``data-label``, ``data-value``,
    ``data-low``, ``data-high``."""
    finite = [v for v in list(values) + list(low) + list(high)
              if v is not None and math.isfinite(v)] or [0.0]
    ylo, yhi = min(finite + [0.0]), max(finite + [0.0])
    pad = (yhi - ylo) * 0.05 or 1.0
    y = _scale(ylo - pad, yhi + pad, H - B, T)
    n = max(len(labels), 1)
    step = (W - R - L) / n
    body = [f'<line x1="{L}" x2="{W - R}" y1="{y(0.0):.1f}" y2="{y(0.0):.1f}" '
            'stroke="#999"/>']
    for i, (lab, v, lo, hi) in enumerate(zip(labels, values, low, high)):
        cx = L + step * (i + 0.5)
        attrs = (f'class="point" data-label="{_a(lab)}" data-value="{_a(v)}" '
                 f'data-low="{_a(lo)}" data-high="{_a(hi)}"')
        parts = [f"<g {attrs}>"]
        if lo is not None and hi is not None:
            parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(lo):.1f}" '
                         f'y2="{y(hi):.1f}" stroke="#555"/>')
        if v is not None:
            parts.append(f'<circle cx="{cx:.1f}" cy="{y(v):.1f}" r="3.5" fill="#1f77b4"/>')
        if n <= 24:
            parts.append(f'<text x="{cx:.1f}" y="{H - B + 12}" font-size="9" '
                         f'text-anchor="middle">{_a(str(lab)[:10])}</text>')
        parts.append("</g>")
        body.append("".join(parts))
    return _frame(title, body, "", ylabel, ylo - pad, yhi + pad, "errorbars")


def loglog(xs: Sequence[float], ys: Sequence[float | None], *, now: float, title: str,
           xlabel: str, ylabel: str, target: float | None = None) -> str:
    """A curve on log-log axes with a vertical marker at ``now`` and a dashed ``target``
    line; ``data-x`` / ``data-y`` per point."""
    pts = [(a, b) for a, b in zip(xs, ys) if b is not None and a > 0 and b > 0]
    if not pts:
        return _frame(title, [], xlabel, ylabel, 0.0, 1.0, "loglog", log=True)
    lx = [math.log10(a) for a, _ in pts]
    ly = [math.log10(b) for _, b in pts] + ([math.log10(target)] if target else [])
    x = _scale(min(lx), max(lx), L, W - R)
    y = _scale(min(ly), max(ly), H - B, T)
    body = ['<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="'
            + " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(lx, ly)) + '"/>']
    body += [f'<circle class="curve-point" data-x="{_num(a)}" data-y="{_num(b)}" '
             f'cx="{x(math.log10(a)):.1f}" cy="{y(math.log10(b)):.1f}" r="2"/>'
             for a, b in pts]
    if now > 0:
        body.append(f'<line class="now" data-x="{_num(now)}" x1="{x(math.log10(now)):.1f}" '
                    f'x2="{x(math.log10(now)):.1f}" y1="{T}" y2="{H - B}" stroke="#d62728"/>')
    if target:
        body.append(f'<line class="target" data-y="{_num(target)}" x1="{L}" x2="{W - R}" '
                    f'y1="{y(math.log10(target)):.1f}" y2="{y(math.log10(target)):.1f}" '
                    'stroke="#2ca02c" stroke-dasharray="5,4"/>')
    body.append(f'<text x="{L + 4}" y="{H - B + 24}" font-size="10">'
                f'{xs[0]:.3g} .. {xs[-1]:.3g} reports (log)</text>')
    return _frame(title, body, xlabel, ylabel, min(ly), max(ly), "loglog", log=True)
