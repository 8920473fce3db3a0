"""Pictures and notebook views of a privacy budget: :meth:`Budget.plot`, ``dpfast ledger
plot`` and ``Budget._repr_html_``.

They read the ledger only through its public reading API (:meth:`Budget.history`,
:func:`dpfast.budget.inspect_ledger` records).  matplotlib is optional (``pip install
'dpfast[plot]'``) and imported only inside :func:`plot_spending`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["spending_series", "plot_spending", "budget_html"]


def spending_series(filt: Any, rows: Sequence[Any]
                    ) -> dict[str, tuple[list[Any], list[float]]]:
    """Per analyst (``""``: the whole budget; analysts only if some charge names one):
    the times of the accepted charges and the epsilon spent after each -- the
    ``(epsilon, delta)`` the accounting certifies for the charges so far, at the budget's
    delta (what :meth:`Budget.spent <dpfast.Budget.spent>` said then; an analyst's against
    their sub-budget's filter).  ``rows`` are verified ledger rows (every kind, oldest
    first); refused charges are not spent and are left out."""
    from .books import Books, absorb_row
    from .records import CHARGED, utc

    state, books = filt.new_state(), Books(filt)
    series: dict[str, tuple[list[Any], list[float]]] = {"": ([], [])}
    for r in rows:
        absorb_row(filt, state, books, r)
        if r.status != CHARGED:
            continue
        when = utc(r.time)
        series[""][0].append(when)
        series[""][1].append(_eps(filt.spent(state)))
        if r.analyst:
            sub = books.filter_of(r.analyst) or filt
            t, v = series.setdefault(r.analyst, ([], []))
            t.append(when)
            v.append(_eps(sub.spent(books.state_of(r.analyst))))
    return series


def _eps(cost: Any) -> float:
    e = cost.epsilon
    return math.inf if e is None else float(e) + 0.0


def plot_spending(filt: Any, rows: Sequence[Any], *,
                  title: str = "privacy budget spent over time", ax: Any = None) -> Any:
    """Epsilon spent over time (cumulative, at the budget's delta; step curves: the whole
    budget and one per analyst when charges name analysts) against the budget's epsilon
    (a horizontal line; an analyst's sub-budget as a dotted one), refused charges marked,
    dates on the time axis.  Returns the matplotlib Axes."""
    try:
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot() needs matplotlib: pip install 'dpfast[plot]'") from exc
    from .books import parse_definition
    from .records import ANALYST, REFUSED, utc

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    series = spending_series(filt, rows)
    times, total = series.pop("")
    if times:  # each curve starts at 0 at its first charge
        ax.step([times[0], *times], [0.0, *total], where="post", lw=2, marker="o", ms=4,
                label="all analysts" if series else "epsilon spent")
    limits = {}
    for r in rows:
        if r.status == ANALYST:
            limits[r.analyst] = parse_definition(r.event)
    for name in sorted(series):
        t, v = series[name]
        (line,) = ax.step([t[0], *t], [0.0, *v], where="post", lw=1.2, marker="o", ms=3,
                          label=f"analyst {name}")
        sub = limits.get(name)
        if sub is not None:
            ax.axhline(sub[0], color=line.get_color(), ls=":", lw=1,
                       label=f"{name}'s sub-budget epsilon {sub[0]:g}")
    refused = [r for r in rows if r.status == REFUSED]
    if refused:
        base = total[-1] if total else 0.0
        ax.plot([utc(r.time) for r in refused], [base] * len(refused), "x", color="red",
                ms=7, label=f"refused ({len(refused)})")
    ax.axhline(filt.epsilon, color="gray", ls="--", lw=1,
               label=f"budget epsilon {filt.epsilon:g}")
    shown = [v for _, vs in [("", total), *series.values()] for v in vs if math.isfinite(v)]
    ax.set_ylim(0.0, max([filt.epsilon, *shown]) * 1.08)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel(f"epsilon spent (at delta={filt.delta:g})" if filt.delta
                  else "epsilon spent")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    ax.figure.tight_layout()
    return ax


def budget_html(budget: Any) -> str:
    """A notebook view of a Budget: its definition, what was spent, what is left and the
    last charges."""
    head = (f"<b>Budget</b>: epsilon {budget.epsilon:g}, delta {budget.delta:g}, "
            f"{html.escape(str(budget.accounting))} accounting")
    try:
        spent, left = budget.spent(), budget.remaining()
        records = budget.history()
    except Exception as exc:  # a view never raises (closed budget, damaged ledger)
        return f"<div>{head}<br>{html.escape(str(exc))}</div>"
    lines = [head,
             f"spent: epsilon {spent.epsilon + 0.0:.6g}, delta {spent.delta + 0.0:.3g}",
             ("exhausted: no further release fits" if left.exhausted else
              f"a next release fits if its epsilon is at most {left.epsilon + 0.0:.6g}"),
             f"{len(records)} charges"]
    rows = ["<tr><th>id</th><th>time (UTC)</th><th>analyst</th><th>note</th>"
            "<th>status</th></tr>"]
    for c in records[-10:]:
        rows.append(f"<tr><td>{c.id}</td><td>{c.time:%Y-%m-%d %H:%M:%S}</td>"
                    f"<td>{html.escape(c.analyst)}</td><td>{html.escape(c.note)}</td>"
                    f"<td>{html.escape(c.status)}</td></tr>")
    table = "<table>" + "".join(rows) + "</table>" if records else ""
    return "<div>" + "<br>".join(lines) + table + "</div>"
