"""``dpfast ledger show FILE`` / ``verify FILE`` / ``plot FILE -o spend.png``: look at a
budget ledger.

``show`` prints the ledger's definition, every record (accepted, failed and refused
charges, with who, where and when) as a table, what was spent and what a next release
may still cost; ``show --by analyst`` / ``--by query`` prints the usage report instead
(total, spent, remaining, utilization; per analyst: sub-budget, spent, left, charges,
refusals, cache hits; per query id: cost, status, cache hits).  ``verify`` checks the
hash chain from the definition to the last row (and every cached result against its
digest in the chain) and prints its head hash (record it elsewhere to detect a later
rewrite of the whole file), and the ledger against its anchor and checkpoints.  ``plot``
draws the epsilon spent over time (at the budget's delta, against the budget's epsilon;
one curve per analyst when charges name analysts; needs matplotlib) into a PNG.  All
only read the file and apply the rules ``dpfast.Budget`` applies to a ledger's path (owner,
mode, file type, directory).  A keyed ledger needs its key in ``DPFAST_LEDGER_KEY``.  Exit
codes: 0 ok, 1 the chain is broken (or the ledger lost charges), 2 not a usable ledger.
"""

from __future__ import annotations

import argparse
import math

HELP = ("show, verify or plot a privacy-budget ledger file (read-only); register its "
        "analysts (analysts add)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True,
                                help="show: history and totals; verify: the hash chain; plot: "
                                "spending over time; analysts: the analyst registry")
    show = sub.add_parser("show", help="print the ledger's history, what was spent and "
                          "what is left", description="print the ledger's history, what "
                          "was spent and what is left")
    show.add_argument("file", metavar="FILE", help="path of the ledger (a SQLite file)")
    show.add_argument("--limit", type=int, default=0, metavar="N",
                      help="print only the last N records (default: all)")
    show.add_argument("--by", choices=["analyst", "query"], default=None,
                      help="print the usage report per analyst or per query id instead of "
                      "the records")
    show.add_argument("--detail", action="store_true",
                      help="also print the accounting's own figures (the Renyi orders and "
                      "RDP per order, zCDP rho); by default every cost is an (epsilon, "
                      "delta) at the budget's delta")
    verify = sub.add_parser("verify", help="verify the hash chain (exit 1 if broken)",
                            description="verify the hash chain (exit 1 if broken)")
    verify.add_argument("file", metavar="FILE", help="path of the ledger (a SQLite file)")
    plot = sub.add_parser("plot", help="draw the spending over time into a PNG",
                          description="draw the spending over time (by analyst when charges "
                          "name analysts) into a PNG (needs matplotlib)")
    plot.add_argument("file", metavar="FILE", help="path of the ledger (a SQLite file)")
    plot.add_argument("-o", "--output", required=True, metavar="FILE.png",
                      help="the PNG file to write")
    from dpfast.cli import analysts

    analysts.add_parser(sub)  # the analyst registry: dpfast.cli.analysts


def _cell(text: str, width: int) -> str:
    from dpfast.budget.names import shown

    text = shown(text)  # no control character of a stored note or name reaches a terminal
    return text if len(text) <= width else text[: width - 1] + "…"


def _cost(charge) -> str:  # type: ignore[no-untyped-def]
    """A charge's cost as a person reads it: ``(epsilon, delta)`` (see :class:`Cost`)."""
    c = charge.cost
    if c.epsilon is None:
        return "-"
    from dpfast.budget.display import up

    return f"eps={up(c.epsilon)}" + (f" delta={up(c.delta, 3)}" if c.delta else "")


def _detail(charge) -> str:  # type: ignore[no-untyped-def]
    """The accounting's own figures of a charge (``--detail``)."""
    c = charge.cost
    if c.rdp is not None and c.orders is not None:
        parts = [f"a={a:g}:{r:.4g}" for a, r in zip(c.orders, c.rdp, strict=False)
                 if math.isfinite(r)]
        return "rdp " + " ".join(parts) if parts else "rdp (none)"
    if c.rho is not None:
        return f"rho={c.rho:.6g}"
    return ""


def _table(records, limit: int, detail: bool = False) -> list[str]:  # type: ignore[no-untyped-def]
    head: tuple[str, ...] = ("record", "time (UTC)", "status", "user@host:pid", "analyst",
                             "note", "event", "cost (epsilon, delta)")
    widths: tuple[int, ...] = (6, 19, 8, 24, 12, 24, 22, 28)
    if detail:
        head, widths = head + ("accounting's figures",), widths + (400,)
    rows = [head]
    shown = records[-limit:] if limit > 0 else records
    for c in shown:
        event = c.event_json if c.event is None else type(c.event).__name__
        who = f"{c.user or '?'}@{c.host or '?'}:{c.pid}"
        row = (str(c.id), c.time.strftime("%Y-%m-%d %H:%M:%S"), c.status, who,
               c.analyst, c.note, event, _cost(c))
        rows.append(row + ((_detail(c),) if detail else ()))
    return ["  ".join(_cell(v, w).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]


def _others(rows) -> str:  # type: ignore[no-untyped-def]
    """The ledger's records that are not charges, counted by kind."""
    kinds = (("analyst", "analyst sub-budget", "analyst sub-budgets"),
             ("stored", "stored result", "stored results"), ("hit", "cache hit", "cache hits"),
             ("failed", "failure mark", "failure marks"))
    parts = []
    for status, one, many in kinds:
        n = sum(1 for r in rows if r.status == status)
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts)


def run(args: argparse.Namespace) -> int:
    from dpfast.budget import inspect_ledger
    from dpfast.budget.audit import describe
    from dpfast.cli import CliError

    if getattr(args, "limit", 0) < 0:
        raise ValueError("--limit must be >= 0")
    if args.action == "analysts":
        from dpfast.cli import analysts

        return analysts.run(args)
    if args.action == "plot":
        return _plot(args)
    report = inspect_ledger(args.file)
    d = report.definition
    if args.action == "show" and getattr(args, "by", None):
        return _usage(args, report)
    if args.action == "verify":
        if not report.chain_ok:
            raise CliError(report.problem, 1)
        print(f"ok: {args.file}: {len(report.records)} records, hash chain verified; "
              f"head {report.head}")
        return 0
    detail = bool(getattr(args, "detail", False))
    orders = "" if d.get("orders") is None or not detail else f", orders={d['orders']}"
    print(f"ledger {args.file} (format {report.version}, mode {report.mode:04o})")
    if report.mode & 0o077:
        import sys

        who = "written" if report.mode & 0o022 else "read"
        print(f"warning: other users can {who} this ledger (mode {report.mode:04o}); "
              f"run 'chmod 600 {args.file}'", file=sys.stderr)
    print(f"budget: epsilon={d['epsilon']!r}, delta={d['delta']!r}, "
          f"accounting={d['accounting']!r}{orders}")
    counts = {s: sum(1 for c in report.records if c.status == s)
              for s in ("charged", "failed", "refused")}
    others = _others(report.rows)
    print(f"charges: {len(report.records)} ({counts['charged']} charged, "
          f"{counts['failed']} failed after the charge, {counts['refused']} refused); "
          f"the ledger has {len(report.rows)} records"
          + (f" (the others: {others})" if others else "")
          + ", numbered in order")
    for line in _table(report.records, args.limit, detail):
        print(line)
    if not report.chain_ok:
        raise CliError(report.problem, 1)
    assert report.spent is not None and report.remaining is not None
    print(describe(report.spent, report.remaining))
    if detail:
        print(f"accounting's figures: {_state_detail(report.spent, report.remaining)}")
    print(f"hash chain verified; head {report.head}")
    return 0


def _state_detail(spent, left) -> str:  # type: ignore[no-untyped-def]
    """What was spent and what is left in the accounting's own units (``--detail``)."""
    out = []
    if spent.rho is not None:
        out.append(f"spent rho={spent.rho:.6g}")
    if left.rho is not None:
        out.append(f"rho of a next Gaussian <= {left.rho:.6g}")
    if spent.rdp is not None and spent.orders is not None:
        out.append("spent RDP " + " ".join(
            f"a={a:g}:{r:.4g}" for a, r in zip(spent.orders, spent.rdp, strict=False)
            if math.isfinite(r) and r > 0) or "spent RDP none")
    if left.rdp is not None and left.orders is not None:
        out.append("RDP left " + " ".join(
            f"a={a:g}:{r:.4g}" for a, r in zip(left.orders, left.rdp, strict=False)
            if math.isfinite(r)))
    return "; ".join(out) or f"{left.accounting} accounting sums epsilon and delta"


def _usage(args: argparse.Namespace, report) -> int:  # type: ignore[no-untyped-def]
    from dpfast.budget.books import Books, absorb_row
    from dpfast.budget.registry import make_filter
    from dpfast.budget.usage import usage_of
    from dpfast.cli import CliError

    if not report.chain_ok:
        raise CliError(report.problem, 1)
    d = report.definition
    filt = make_filter(d.get("accounting"), d.get("epsilon"), d.get("delta"), d.get("orders"))
    state, books = filt.new_state(), Books(filt)
    for row in report.rows:
        absorb_row(filt, state, books, row)
    print(f"ledger {args.file}: usage by {args.by}")
    for line in usage_of(filt, state, books, report.rows).lines(
            args.by, detail=bool(getattr(args, "detail", False))):
        print(line)
    print(f"hash chain verified; head {report.head}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    import os

    from dpfast.budget import inspect_ledger
    from dpfast.cli import CliError, check_writable, write_atomic

    if not args.output.lower().endswith(".png"):
        raise CliError(f"-o {args.output}: the plot is written as PNG: give a .png name")
    if not os.path.exists(args.file):
        raise CliError(f"ledger not found: {args.file}")
    check_writable(args.output)
    try:
        import matplotlib
    except ImportError:
        raise CliError("dpfast ledger plot needs matplotlib: pip install 'dpfast[plot]'",
                       1) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpfast.budget.plot import plot_spending

    report = inspect_ledger(args.file)
    if not report.chain_ok:
        raise CliError(report.problem, 1)
    from dpfast.budget.registry import make_filter

    d = report.definition
    filt = make_filter(d.get("accounting"), d.get("epsilon"), d.get("delta"), d.get("orders"))
    ax = plot_spending(filt, report.rows,
                       title=f"privacy budget spent over time ({os.path.basename(args.file)})")
    write_atomic(args.output, lambda tmp: ax.figure.savefig(tmp, format="png", dpi=100))
    plt.close(ax.figure)
    n = sum(1 for c in report.records if c.status != "refused")
    print(f"plot of {n} charges written to {args.output}")
    return 0
