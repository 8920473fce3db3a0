"""``dpfast ldp report FILE``: the utility monitor of a local-DP aggregate.

``FILE`` is an aggregator state written by :meth:`dpfast.local.Aggregator.save`.  Prints,
per estimate, the count, its frequency and standard error, the confidence interval, the
reports needed for ``--target`` at the reports' epsilon and a flag when the standard error
is above ``--threshold``; ``--check`` exits 1 when any estimate is flagged.
"""

from __future__ import annotations

import argparse

HELP = "local-DP collection: print the utility monitor of an aggregate state file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="ldp_cmd", metavar="ACTION", required=True,
                                help="report: print the utility monitor of a state file")
    rep = sub.add_parser("report", help="print estimates, standard errors, the reports "
                                        "needed for a target error and flags",
                         description="Print the utility monitor of an aggregate state.")
    rep.add_argument("file", metavar="FILE",
                     help="aggregator state written by dpfast.local.Aggregator.save")
    rep.add_argument("--target", type=float, default=0.01, metavar="T",
                     help="target standard error of an estimated frequency (default 0.01)")
    rep.add_argument("--threshold", type=float, default=None, metavar="X",
                     help="flag estimates whose frequency standard error is above X "
                          "(default: the target)")
    rep.add_argument("--alpha", type=float, default=0.05, metavar="A",
                     help="confidence intervals at level 1 - A (default 0.05)")
    rep.add_argument("--top", type=int, default=None, metavar="N",
                     help="show only the N largest estimates")
    rep.add_argument("--candidates", default=None, metavar="LIST",
                     help="comma-separated candidates to estimate (default: those stored "
                          "with the state; integers are read as integers)")
    rep.add_argument("--check", action="store_true",
                     help="exit with status 1 when any estimate is flagged")


def _candidates(text: str) -> list[object]:
    out: list[object] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            out.append(part)
    if not out:
        raise ValueError("--candidates is empty")
    return out


def run(args: argparse.Namespace) -> int:
    from dpfast.local import Aggregator, monitor

    agg = Aggregator.load(args.file)
    cands = None if args.candidates is None else _candidates(args.candidates)
    if args.top is not None and args.top < 1:
        raise ValueError("--top must be >= 1")
    report = monitor(agg, target=args.target, threshold=args.threshold, candidates=cands,
                     alpha=args.alpha, top=args.top)
    print(report.format())
    return 1 if args.check and report.flagged else 0
