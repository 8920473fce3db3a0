"""Pictures and notebook views of releases: :meth:`TableRelease.plot`,
:meth:`TopDownRelease.plot` and the ``_repr_html_`` Jupyter shows.

matplotlib is optional (``pip install 'dpfast[plot]'``) and imported only inside the
plotting functions; the HTML views need nothing.  Plotting is post-processing of the
released values and of the public noise law: it costs no privacy.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from dpfast.accounting.events import DpEvent
    from dpfast.tables._multi_release import AggregateRelease
    from dpfast.tables._topdown_release import TopDownRelease
    from dpfast.tables.quantile_release import QuantileRelease
    from dpfast.tables.release import TableRelease

__all__ = ["aggregate_html", "axes", "plot_table", "plot_topdown", "quantile_html",
           "table_html", "topdown_html"]

_MAX_TICKS = 40  # more keys than this: no tick labels (unreadable)
_HTML_ROWS = 20


def axes(ax: Axes | None = None, figsize: tuple[float, float] = (6.4, 4.0)) -> Axes:
    """``ax``, or a new figure's Axes; a clear ImportError without matplotlib."""
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot() needs matplotlib: pip install 'dpfast[plot]'") from exc
    _, new = plt.subplots(figsize=figsize)
    return new


def _labels(release: TableRelease) -> list[str]:
    keys = release._key_list()
    return [", ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in keys]


def _order(release: TableRelease) -> np.ndarray:
    """Indices that sort the released keys (mixed types: by their text)."""
    keys = release._key_list()
    try:
        return np.array(sorted(range(len(keys)),
                               key=lambda i: cast("SupportsRichComparison", keys[i])),
                        dtype=np.int64)
    except TypeError:
        text = _labels(release)
        return np.array(sorted(range(len(keys)), key=lambda i: text[i]), dtype=np.int64)


def plot_table(release: TableRelease, *, alpha: float = 0.05, ax: Axes | None = None
               ) -> Axes:
    """The released values with their ``1 - alpha`` intervals as error bars, keys sorted."""
    ax = axes(ax)
    order = _order(release)
    values = np.asarray(release.values, dtype=np.float64)[order]
    lo, hi = (np.asarray(a, dtype=np.float64)[order]
              for a in release.confidence_interval(alpha))
    x = np.arange(values.size)
    err = np.vstack([np.maximum(values - lo, 0), np.maximum(hi - values, 0)])
    ax.errorbar(x, values, yerr=err, fmt="o", ms=4, capsize=3 if values.size <= 60 else 0,
                label=f"noisy {release.statistic}, {100 * (1 - alpha):g}% interval")
    names = release._names()
    ax.set_xlabel(", ".join(names))
    ax.set_ylabel(release._value_name)
    ax.set_title(f"{release.statistic} per key ({len(release)} keys)")
    if values.size <= _MAX_TICKS:
        labels = [_labels(release)[i] for i in order]
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=45 if values.size > 8 else 0,
                           ha="right" if values.size > 8 else "center")
    else:
        ax.set_xticks([])
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    cast("Figure", ax.figure).tight_layout()  # (a SubFigure's Axes: AttributeError)
    return ax


def plot_topdown(release: TopDownRelease, *, alpha: float = 0.05,
                 truth: Sequence[npt.ArrayLike] | None = None, ax: Axes | None = None
                 ) -> Axes:
    """Error by level: the raw measurements' ``1 - alpha`` half-width and the released
    (consistent) estimates' RMSE bound, from the noise law; with ``truth`` (evaluation
    only: sensitive) the measured RMSE of the released tables too."""
    ax = axes(ax)
    rows = release.report(alpha, truth)
    levels = np.arange(len(rows))
    width = 0.38 if truth is None else 0.27
    raw = [float(np.max(r["noisy_halfwidth"])) for r in rows]
    bound = [r["consistent_rmse_bound"] for r in rows]
    ax.bar(levels - width / 2 if truth is None else levels - width, raw, width,
           label=f"raw measurement, {100 * (1 - alpha):g}% half-width")
    ax.bar(levels + width / 2 if truth is None else levels, bound, width,
           label="least squares, RMSE bound")
    if truth is not None:
        ax.bar(levels + width, [r["released_rmse"] for r in rows], width,
               label="released, measured RMSE")
    ax.set_xticks(levels)
    ax.set_xticklabels([f"{r['level']}\n({r['units']} units)" for r in rows])
    ax.set_xlabel("level (coarse to fine)")
    ax.set_ylabel("error (count units)")
    ax.set_title(f"TopDown: error by level (rho = {release.rho_total:.4g} zCDP)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    cast("Figure", ax.figure).tight_layout()  # (a SubFigure's Axes: AttributeError)
    return ax


def _cell(v: object) -> str:
    if isinstance(v, float):
        return html.escape(f"{v:.6g}")
    return html.escape(str(v))


def _privacy(event: DpEvent, delta: float | None = None) -> str:
    """The privacy spent, as a person reads it: ``(epsilon, delta)``."""
    from dpfast.budget.display import privacy_text

    return f"privacy spent: {html.escape(privacy_text(event, delta))}"


def _table(cols: Mapping[str, npt.ArrayLike], n: int) -> str:
    """The first rows of ``cols`` as an HTML table, and how many more there are."""
    names = list(cols)
    rows = ["<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in names) + "</tr>"]
    shown = min(n, _HTML_ROWS)
    lists = [np.asarray(cols[c])[:shown].tolist() for c in names]
    for i in range(shown):
        rows.append("<tr>" + "".join(f"<td>{_cell(col[i])}</td>" for col in lists) + "</tr>")
    more = f"<p>... {n - shown} more rows (to_pandas())</p>" if n > shown else ""
    return "<table>" + "".join(rows) + "</table>" + more


def _view(head: list[str], table: str) -> str:
    return "<div>" + "<br>".join(head) + table + "</div>"


def table_html(release: TableRelease, alpha: float = 0.05) -> str:
    """A notebook view: what was released, the privacy spent in ``(epsilon, delta)``, the
    intervals and the first rows (with their ``ci_low`` / ``ci_high``)."""
    n = len(release)
    head = [f"<b>TableRelease</b>: {html.escape(release.statistic)} of {n} keys",
            _privacy(release.event)]
    if release.threshold is not None:
        head.append(f"keys chosen privately (threshold {release.threshold})")
    conf = f"{100 * (1 - alpha):g}%"
    if release._mean_parts is None and release._interval is None:
        head.append(f"{conf} interval half-width {_cell(release.law.halfwidth(alpha))}: each "
                    f"value within &plusmn;{_cell(release.law.halfwidth(alpha))} with {conf} "
                    "confidence")
    else:
        head.append(f"{conf} intervals in ci_low, ci_high")
    return _view(head, _table(release.to_columns(alpha), n))


def quantile_html(release: QuantileRelease, alpha: float = 0.05) -> str:
    """A notebook view of a quantile release: privacy, rank-error statement, rows."""
    n = len(release)
    qs = ", ".join(f"{q:g}" for q in release.q)
    head = [f"<b>QuantileRelease</b>: quantile{'s' if len(release.q) > 1 else ''} {qs} of "
            f"{n} keys", _privacy(release.event),
            html.escape(str(release.accuracy(alpha)["statement"]))]
    if release.threshold is not None:
        head.append(f"keys chosen privately (threshold {release.threshold})")
    return _view(head, _table(release.to_columns(), n))


def aggregate_html(release: AggregateRelease, alpha: float = 0.05) -> str:
    """A notebook view of several statistics released together: privacy, every metric
    with its interval (a rank metric with its rank error)."""
    n = len(release)
    head = [f"<b>AggregateRelease</b>: {html.escape(', '.join(release.metrics))} of {n} keys",
            _privacy(release.event),
            f"{100 * (1 - alpha):g}% intervals in &lt;metric&gt;_ci_low, _ci_high"]
    if release.threshold is not None:
        head.append(f"keys chosen privately (threshold {release.threshold})")
    return _view(head, _table(release.to_columns(alpha), n))


def _topdown_privacy(release: TopDownRelease) -> str:
    """TopDown's privacy spent: its rho converted at delta 1e-10 (its own conversion)."""
    from dpfast.budget.display import up

    return (f"privacy spent: (epsilon={up(release.epsilon(1e-10))}, delta=1e-10), from rho "
            f"= {release.rho_total:.6g} zCDP")


def topdown_html(release: TopDownRelease, alpha: float = 0.05, level: int | None = None) -> str:
    """A notebook view of a TopDown release: the privacy spent in ``(epsilon, delta)``,
    its summary (error by level) and the first rows of one level (the finest by default:
    released and measured values with the released value's interval)."""
    j = release.n_levels - 1 if level is None else level
    head = [f"<b>TopDownRelease</b>: {release.n_levels} levels",
            _topdown_privacy(release),
            "<pre>" + html.escape(release.summary(alpha)) + "</pre>",
            f"level {j} ({release.estimates[j].shape[0]} units), {100 * (1 - alpha):g}% "
            "intervals:"]
    cols = release.to_columns(j, alpha)
    return _view(head, _table(cols, release.estimates[j].shape[0]))
