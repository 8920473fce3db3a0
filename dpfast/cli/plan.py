"""``dpfast plan``: the epsilon a target accuracy needs, and where it sits.

Example::

    dpfast plan --use-case healthcare --accuracy 10 --alpha 0.05 [--sensitivity 1]

prints the epsilon needed (:func:`dpfast.accuracy_to_epsilon`), where it sits among the
use-case ranges and published deployments (:mod:`dpfast.guidelines`), and the budget it
leaves (of ``--budget``, default the use case's upper end, under basic composition).
"""

from __future__ import annotations

import argparse
import math

HELP = "plan a release from its accuracy: the epsilon needed and where it sits"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--accuracy", type=float, required=True,
                        help="target half-width of the confidence interval (e.g. 10 for "
                             "'within +-10')")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="1 - alpha is the confidence level (default 0.05: 95%%)")
    parser.add_argument("--sensitivity", type=float, default=1.0,
                        help="one row's effect on its value (default 1)")
    parser.add_argument("--mechanism", default="discrete_laplace",
                        choices=["discrete_laplace", "laplace", "discrete_gaussian",
                                 "gaussian"],
                        help="the noise (default discrete_laplace)")
    parser.add_argument("--delta", type=float, default=0.0,
                        help="delta for the Gaussian mechanisms (default 0)")
    parser.add_argument("--max-partitions", type=int, default=None,
                        help="contribution bound of a table: cells one person may change")
    parser.add_argument("--max-per-partition", type=int, default=None,
                        help="contribution bound of a table: rows per person and cell")
    parser.add_argument("--use-case", default=None,
                        help="a use case of dpfast.guidelines (e.g. healthcare, "
                             "government_statistics, ab_testing)")
    parser.add_argument("--budget", type=float, default=None,
                        help="total epsilon budget to plan against (default: the use "
                             "case's upper end)")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="an existing budget ledger: plan against what it has left "
                             "(read only; nothing is charged)")


def _ceil6(x: float) -> float:
    """``x`` rounded up to 6 significant digits (as printed with ``:.6g``)."""
    from decimal import ROUND_CEILING, Decimal

    d = Decimal(x)
    exp = d.adjusted() - 5
    return float(d.quantize(Decimal(1).scaleb(exp), rounding=ROUND_CEILING))


def run(args: argparse.Namespace) -> int:
    from dpfast import guidelines, planning

    uc = guidelines.use_case(args.use_case) if args.use_case is not None else None
    kw = dict(mechanism=args.mechanism, sensitivity=args.sensitivity, delta=args.delta,
              max_partitions=args.max_partitions, max_per_partition=args.max_per_partition)
    eps = planning.accuracy_to_epsilon(args.accuracy, args.alpha, **kw)
    width = planning.epsilon_to_accuracy(eps, args.alpha, **kw)
    conf = f"{100 * (1 - args.alpha):g}%"
    shown = _ceil6(eps)  # rounded up: the epsilon shown gives the accuracy too
    print(f"epsilon needed: {shown:.6g} ({args.mechanism}, sensitivity {args.sensitivity:g}"
          + ("" if args.delta == 0 else f", delta {args.delta:g}")
          + (f", max_partitions {args.max_partitions}" if args.max_partitions else "")
          + (f", max_per_partition {args.max_per_partition}" if args.max_per_partition else "")
          + f"): values within +-{width:g} of the truth with {conf} confidence")
    below = math.nextafter(eps, 0.0)
    print(f"  (shown rounded up; the least epsilon that gives +-{width:g} is {eps!r}: any "
          f"smaller one gives +-{planning.epsilon_to_accuracy(below, args.alpha, **kw):g})")
    print("where it sits:")
    for line in guidelines.placement(eps, args.use_case):
        print(f"  {line}")
    if uc is not None and not (uc.low <= eps <= uc.high):
        side = "above" if eps > uc.high else "below"
        print(f"warning: epsilon {eps:.4g} is {side} the {uc.low:g}-{uc.high:g} range "
              f"conventional for {uc.name.lower()}")
    if args.ledger is not None:
        import dpfast

        if args.budget is not None:
            raise ValueError("give --budget or --ledger, not both")
        with dpfast.Budget.from_ledger(args.ledger) as b:
            left_eps = b.remaining().epsilon
            total_eps = b.epsilon
        fits = "fits" if eps <= left_eps else "does NOT fit"
        print(f"ledger {args.ledger}: {left_eps:.4g} epsilon left of {total_eps:g}; this "
              f"release {fits} (a pure-DP charge of {eps:.4g})")
        return 0
    total = args.budget if args.budget is not None else (uc.high if uc is not None else None)
    if total is not None:
        if not (math.isfinite(total) and total > 0):
            raise ValueError(f"--budget must be a finite number > 0, got {total!r}")
        if args.budget is not None:
            source = "--budget"
        else:
            assert uc is not None
            source = f"the {uc.name.lower()} range's upper end"
        left = total - eps
        if left < 0:
            print(f"budget: this release alone needs {eps:.4g}, more than the {total:g} of "
                  f"{source}")
        else:
            n = math.floor(total / eps)
            print(f"budget left: {left:.4g} of {total:g} ({source}); {n} release(s) like "
                  "this fit in it (basic composition)")
    return 0
