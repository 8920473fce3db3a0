"""``dpfast tune``: recommend contribution bounds for a release (:func:`dpfast.tables.tune`).

Example::

    dpfast tune flights.csv --key dest --id tailnum --metric count --metric mean:arr_delay \\
        --metric median:arr_delay --bounds arr_delay -60 180 --epsilon 1 --delta 1e-5 \\
        --domain dests.csv -o tuning.json

Spends ``--share`` (default 10%, 5% more per column without ``--bounds``) of
``--epsilon`` on a private summary of how much each person contributes and a private
histogram of each value column without ``--bounds`` (charged to ``--ledger`` when given), or
reads ``--public-sample`` at no cost, and prints the recommended ``--max-partitions`` /
``--max-per-partition`` (and ``--bounds`` for the columns without them: the pair of least
predicted error) with each metric's predicted error per key (bias and noise); ``-o``
writes the whole result (every candidate) as JSON, ``--plot`` a PNG of the candidates'
predicted error.
A metric is ``count``, ``privacy_id_count``, ``STAT:COLUMN`` (``sum``, ``mean``,
``median``, ``min``, ``max``) or ``quantile:COLUMN:Q``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from dpfast.cli import CliError, write_atomic
from dpfast.cli._checks import add_person_options, check_columns, check_person
from dpfast.cli._io import budget_sentence, open_budget, read_columns, read_key_file, refused

HELP = "recommend max_partitions / max_per_partition (and bounds) for a release"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="CSV or Parquet file, one row per record")
    parser.add_argument("--key", action="append", required=True, metavar="COL",
                        help="key column to group by (repeat for multi-column keys)")
    add_person_options(parser)
    parser.add_argument("--metric", action="append", required=True, metavar="METRIC",
                        help="count, privacy_id_count, STAT:COLUMN (sum, mean, median, min, "
                             "max) or quantile:COLUMN:Q (repeat)")
    parser.add_argument("--bounds", action="append", nargs=3, default=[],
                        metavar=("COL", "LOW", "HIGH"),
                        help="bounds of a value column (repeat); a column without them gets "
                             "the bounds of least predicted error, from a private histogram "
                             "of its values (part of the tuning's share)")
    parser.add_argument("--epsilon", type=float, required=True,
                        help="the intended release's total epsilon (the tuning's included)")
    parser.add_argument("--delta", type=float, default=0.0,
                        help="its delta (needed without --domain: private key selection)")
    parser.add_argument("--share", type=float, default=None,
                        help="share of --epsilon the tuning spends (default 0.10, and 0.05 "
                             "more per value column without --bounds)")
    parser.add_argument("--domain", default=None, metavar="FILE",
                        help="CSV/Parquet file of the public keys (same column names as --key)")
    parser.add_argument("--public-sample", default=None, metavar="FILE",
                        help="a PUBLIC file with the same columns: tune on it, charge nothing")
    parser.add_argument("--sample-fraction", type=float, default=1.0,
                        help="the share of the population the public sample holds")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="budget ledger charged the tuning's share")
    parser.add_argument("--budget-epsilon", type=float, default=None,
                        help="epsilon of a NEW ledger")
    parser.add_argument("--budget-delta", type=float, default=None,
                        help="delta of a NEW ledger (default 1e-5)")
    parser.add_argument("--seed-key-file", default=None, metavar="FILE",
                        help="file with a 32-byte key to replay the noise (tests, audits)")
    parser.add_argument("-o", "--output", default=None, metavar="FILE.json",
                        help="write the whole result (every candidate) as JSON")
    parser.add_argument("--plot", default=None, metavar="FILE.png",
                        help="draw the candidates' predicted error (needs matplotlib)")


def _metric(text: str) -> Any:
    parts = text.split(":")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return (parts[0], parts[1])
    if len(parts) == 3 and parts[0] == "quantile":
        try:
            return (parts[0], parts[1], float(parts[2]))
        except ValueError:
            raise CliError(f"--metric {text!r}: Q must be a number") from None
    raise CliError(f"--metric {text!r}: give NAME, STAT:COLUMN or quantile:COLUMN:Q")


def _numbers(x: np.ndarray, name: str) -> np.ndarray:
    if x.dtype.kind in "iuf":
        return x
    try:
        return x.astype(np.int64)
    except ValueError:
        pass
    try:
        return x.astype(np.float64)
    except ValueError:
        raise CliError(f"column {name!r} must hold numbers") from None


def _frame(path: str, keys: list[str], pid: str | None, values: list[str],
           what: str) -> Any:
    import pandas as pd

    cols = read_columns(path, keys + ([pid] if pid else []) + values, what)
    return pd.DataFrame({c: (_numbers(np.asarray(cols[c]), c) if c in values
                             else np.asarray(cols[c])) for c in cols})


def run(args: argparse.Namespace) -> int:
    import dpfast
    from dpfast import tables

    check_person(args)
    metrics = [_metric(m) for m in args.metric]
    values = sorted({m[1] for m in metrics if isinstance(m, tuple)})
    check_columns(args.input, {"--key": args.key, "--metric": values,
                               "--id": [args.id] if args.id else []})
    bounds: dict[str, tuple[float, float]] = {}
    for col, lo, hi in args.bounds:
        try:
            bounds[col] = (float(lo), float(hi))
        except ValueError:
            raise CliError(f"--bounds {col} {lo} {hi}: LOW and HIGH must be numbers") from None
    df = _frame(args.input, args.key, args.id, values, "input")
    for c in values:  # integer columns with integral bounds keep integer bounds
        if c in bounds and df[c].dtype.kind in "iu" and all(float(b).is_integer()
                                                           for b in bounds[c]):
            bounds[c] = (int(bounds[c][0]), int(bounds[c][1]))
        elif c in bounds:
            df[c] = df[c].astype(np.float64)
    domain = None
    if args.domain is not None:
        d = read_columns(args.domain, args.key, "domain")
        domain = tuple(d[c] for c in args.key) if len(args.key) > 1 else d[args.key[0]]
    sample = None if args.public_sample is None else _frame(
        args.public_sample, args.key, args.id, values, "public sample")
    opened = open_budget(args) if sample is None else None
    try:
        res = tables.tune(df, args.key if len(args.key) > 1 else args.key[0], args.id,
                          metrics=metrics, epsilon=args.epsilon, delta=args.delta,
                          share=args.share, bounds=bounds or None, domain=domain,
                          public_sample=sample, sample_fraction=args.sample_fraction,
                          rng=read_key_file(args.seed_key_file),
                          budget=None if opened is None else opened.budget,
                          note=f"dpfast tune {args.input}")
    except dpfast.BudgetExceededError as exc:
        assert opened is not None
        raise refused(opened, exc) from None
    except BaseException:
        if opened is not None and opened.budget is not None and not opened.budget.history():
            opened.discard_if_new()
        raise
    if args.output is not None:
        def write(tmp: str) -> None:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({**res.to_dict(), "candidates": res.to_pandas().to_dict("records")},
                          fh, indent=2)
        write_atomic(args.output, write)
    if args.plot is not None:
        ax = res.plot()
        write_atomic(args.plot, lambda tmp: ax.figure.savefig(tmp, format="png", dpi=90))
    spent = ("nothing charged (public sample)" if res.event is None
             else f"spent epsilon {res.epsilon:.6g} on the tuning")
    print(f"recommended: --max-partitions {res.max_partitions} --max-per-partition "
          f"{res.max_per_partition}"
          + "".join(f" --bounds {c} {lo:g} {hi:g}" for c, (lo, hi) in res.bounds.items())
          + f" ({spent}; the release has epsilon {res.release_epsilon:.6g} left)")
    for name, p in res.predicted.items():
        print(f"  {name}: predicted error per key {p.error:.4g} {p.unit} "
              f"(bias {p.bias:.4g}, noise std {p.variance ** 0.5:.4g})")
    for c in res.uninformative:
        print(f"  the bounds of {c} may miss the data (too few people for their share of "
              "epsilon): pass --bounds or a larger --share")
    if opened is not None and opened.note:
        print(opened.note)
    if opened is not None and opened.budget is not None:
        print(budget_sentence(opened))
    return 0
