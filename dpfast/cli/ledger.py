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
draws the spending over time (one curve per analyst when charges name analysts; needs
matplotlib) into a PNG.  All
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
    c = charge.cost
    if c.epsilon is not None and c.rdp is not None:  # mixed: a pure or approximate bound
        return f"eps={c.epsilon:.6g}" + (f" delta={c.delta:.3g}" if c.delta else "")
    if c.rdp is not None and c.orders is not None and len(c.orders) > 8:  # mixed, Gaussian
        rho = [r / a for a, r in zip(c.orders, c.rdp, strict=True)
               if math.isfinite(a) and math.isfinite(r)]
        return f"rdp (zCDP rho about {min(rho):.4g})" if rho else "rdp (none)"
    if c.rdp is not None and c.orders is not None:
        parts = [f"a={a:g}:{r:.4g}" for a, r in zip(c.orders, c.rdp, strict=True)
                 if math.isfinite(r)]
        return "rdp " + " ".join(parts) if parts else "rdp (none)"
    if c.rho is not None:
        return f"rho={c.rho:.6g}"
    if c.epsilon is None:
        return "-"
    return f"eps={c.epsilon:.6g} delta={c.delta:.3g}"


def _table(records, limit: int) -> list[str]:  # type: ignore[no-untyped-def]
    head = ("id", "time (UTC)", "status", "user@host:pid", "analyst", "note", "event", "cost")
    widths = (5, 19, 8, 24, 12, 24, 22, 36)
    rows = [head]
    shown = records[-limit:] if limit > 0 else records
    for c in shown:
        event = c.event_json if c.event is None else type(c.event).__name__
        who = f"{c.user or '?'}@{c.host or '?'}:{c.pid}"
        rows.append((str(c.id), c.time.strftime("%Y-%m-%d %H:%M:%S"), c.status, who,
                     c.analyst, c.note, event, _cost(c)))
    return ["  ".join(_cell(v, w).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]


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
    orders = "" if d.get("orders") is None else f", orders={d['orders']}"
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
    print(f"records: {len(report.records)} ({counts['charged']} charged, "
          f"{counts['failed']} failed after the charge, {counts['refused']} refused)")
    for line in _table(report.records, args.limit):
        print(line)
    if not report.chain_ok:
        raise CliError(report.problem, 1)
    assert report.spent is not None and report.remaining is not None
    print(describe(report.spent, report.remaining))
    print(f"hash chain verified; head {report.head}")
    return 0


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
    for line in usage_of(filt, state, books, report.rows).lines(args.by):
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
    d = report.definition
    ax = plot_spending(report.records, accounting=str(d.get("accounting")),
                       epsilon=d.get("epsilon"),
                       title=f"privacy budget spent over time ({os.path.basename(args.file)})")
    write_atomic(args.output, lambda tmp: ax.figure.savefig(tmp, format="png", dpi=100))
    plt.close(ax.figure)
    n = sum(1 for c in report.records if c.status != "refused")
    print(f"plot of {n} charges written to {args.output}")
    return 0
