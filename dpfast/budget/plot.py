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


def _unit(accounting: str) -> tuple[str, str]:
    """(Cost field, axis label) of the per-charge figure that adds up under ``accounting``."""
    if accounting in ("basic", "advanced"):
        return "epsilon", "epsilon charged (sum of the charges)"
    if accounting == "zcdp":
        return "rho", "rho charged (zCDP, sum of the charges)"
    return "", "number of charges"  # rdp: one curve per order; the count is what is common


def spending_series(records: Sequence[Any], accounting: str
                    ) -> dict[str, tuple[list[Any], list[float]]]:
    """Per analyst (``""``: all charges; analysts only if some charge names one): the
    times of the accepted charges and the cumulative figure after each (step curves).
    Refused charges are not spent and are left out."""
    field, _ = _unit(accounting)
    series: dict[str, tuple[list[Any], list[float]]] = {"": ([], [])}
    totals: dict[str, float] = {"": 0.0}
    for c in records:
        if c.status == "refused":
            continue
        v = getattr(c.cost, field, None) if field else 1.0
        v = 0.0 if v is None or not math.isfinite(v) else float(v)
        names = [""] + ([c.analyst] if c.analyst else [])
        for name in names:
            series.setdefault(name, ([], []))
            totals[name] = totals.get(name, 0.0) + v
            series[name][0].append(c.time)
            series[name][1].append(totals[name])
    return series


def plot_spending(records: Sequence[Any], *, accounting: str, epsilon: float | None = None,
                  title: str = "privacy budget spent over time", ax: Any = None) -> Any:
    """Step curves of the spending over time (all charges; one curve per analyst when the
    charges name analysts), refused charges marked, the budget's epsilon as a line under
    basic composition.  Returns the matplotlib Axes."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot() needs matplotlib: pip install 'dpfast[plot]'") from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    field, label = _unit(accounting)
    series = spending_series(records, accounting)
    times, total = series.pop("")
    if times:  # each curve starts at 0 at its first charge
        ax.step([times[0], *times], [0.0, *total], where="post", lw=2, marker="o", ms=4,
                label="all analysts" if series else "spent")
    for name in sorted(series):
        t, v = series[name]
        ax.step([t[0], *t], [0.0, *v], where="post", lw=1.2, marker="o", ms=3,
                label=f"analyst {name}")
    refused = [c for c in records if c.status == "refused"]
    if refused:
        base = total[-1] if total else 0.0
        ax.plot([c.time for c in refused], [base] * len(refused), "x", color="red", ms=7,
                label=f"refused ({len(refused)})")
    if accounting == "basic" and epsilon is not None and math.isfinite(epsilon):
        ax.axhline(epsilon, color="gray", ls="--", lw=1, label=f"budget epsilon {epsilon:g}")
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if times or refused:
        ax.legend(loc="best", fontsize="small")
    ax.figure.autofmt_xdate()
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
