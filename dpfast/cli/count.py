"""``dpfast count``: release a group-by count from raw records (CSV or Parquet).

Example::

    dpfast count visits.csv --key city --key age_band --id person --epsilon 1 \\
        --delta 1e-6 --max-partitions 3 -o counts.csv

reads one row per record, bounds each person's contribution (``--id``; without it every
row is a different person), releases :func:`dpfast.tables.count` -- over the keys listed in
``--domain`` (public keys), or chosen privately by thresholding (needs ``--delta``) -- and
writes the table with 95% confidence intervals (``--alpha``).  Keys are read as text.  With
``--ledger`` the release is charged to a budget ledger first (a new ledger needs
``--budget-epsilon``; an existing one keeps its own definition); a refusal writes nothing
and exits 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from dpfast.cli import CliError
from dpfast.cli._io import open_budget, read_columns, read_key_file, write_columns

HELP = "release a private group-by count table from a CSV/Parquet file of records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="CSV or Parquet file, one row per record")
    parser.add_argument("--key", action="append", required=True, metavar="COL",
                        help="key column to group by (repeat for multi-column keys)")
    parser.add_argument("--id", default=None, metavar="COL",
                        help="privacy-id column (the person); default: every row is a "
                             "different person")
    parser.add_argument("--epsilon", type=float, required=True,
                        help="privacy parameter epsilon of the release")
    parser.add_argument("--delta", type=float, default=0.0,
                        help="delta (needed without --domain: private partition selection)")
    parser.add_argument("--max-partitions", type=int, default=1, metavar="K",
                        help="keys kept per person (default 1)")
    parser.add_argument("--max-per-partition", type=int, default=1, metavar="C",
                        help="rows kept per person and key (default 1)")
    parser.add_argument("--domain", default=None, metavar="FILE",
                        help="CSV/Parquet file of the public keys (same column names as "
                             "--key): exactly these keys are released")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="budget ledger to charge before any noise is drawn")
    parser.add_argument("--budget-epsilon", type=float, default=None,
                        help="epsilon of a NEW ledger (basic composition)")
    parser.add_argument("--budget-delta", type=float, default=0.0,
                        help="delta of a NEW ledger (default 0)")
    parser.add_argument("--seed-key-file", default=None, metavar="FILE",
                        help="file with a 32-byte key to replay the noise (whoever holds it "
                             "can remove the noise: tests and audits only)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="confidence intervals at level 1 - alpha (default 0.05)")
    parser.add_argument("--no-progress", action="store_true",
                        help="never show a progress bar")
    parser.add_argument("-o", "--output", required=True,
                        help="output file (.csv, or .parquet with pyarrow)")


class _Progress:
    """Stage progress on stderr (tqdm if installed), shown only for slow inputs and only
    when stderr is a terminal."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.bar = None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc="dpfast count", unit="step",
                                file=sys.stderr, leave=False)
            except ImportError:
                self.bar = None

    def step(self, name: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(name)
            self.bar.update(1)
        else:
            print(f"dpfast count: {name}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(args: argparse.Namespace) -> int:
    import dpfast
    from dpfast import tables

    if not (args.epsilon > 0 and args.epsilon < float("inf")):
        raise CliError("--epsilon must be a positive finite number")
    if not 0 <= args.delta < 1:
        raise CliError("--delta must be in [0, 1)")
    if args.domain is None and args.delta == 0:
        raise CliError("without --domain the keys are selected privately: give --delta > 0 "
                       "(or the public keys with --domain)")
    if not 0 < args.alpha < 1:
        raise CliError("--alpha must be in (0, 1)")
    for name in ("max_partitions", "max_per_partition"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1")
    if args.id is not None and args.id in args.key:
        raise CliError("--id must not be a --key column")
    key = read_key_file(args.seed_key_file)
    budget = open_budget(args, accounting="basic")
    t0 = time.perf_counter()
    size = os.path.getsize(args.input) if os.path.exists(args.input) else 0
    show = not args.no_progress and sys.stderr.isatty()  # never into captured output
    progress = _Progress(show and size > 50 * 2 ** 20, 3)
    try:
        cols = read_columns(args.input, args.key + ([args.id] if args.id else []))
        slow = time.perf_counter() - t0 > 2.0
        if slow and show and not progress.enabled:
            progress = _Progress(True, 2)
        progress.step("read")
        keys = tuple(cols[c] for c in args.key) if len(args.key) > 1 else cols[args.key[0]]
        if len(np.asarray(cols[args.key[0]])) == 0:
            raise CliError(f"{args.input} has no rows")
        domain = None
        if args.domain is not None:
            dcols = read_columns(args.domain, args.key, "domain")
            domain = tuple(dcols[c] for c in args.key) if len(args.key) > 1 \
                else dcols[args.key[0]]
        try:
            rel = tables.count(keys, cols[args.id] if args.id else None, epsilon=args.epsilon,
                               delta=args.delta, max_partitions=args.max_partitions,
                               max_per_partition=args.max_per_partition, domain=domain,
                               rng=key, budget=budget, note=f"dpfast count {args.input}")
        except dpfast.BudgetExceededError as exc:
            raise CliError(f"budget refused the release (nothing written): {exc}", 1) \
                from None
        progress.step("released")
        out = rel.to_columns(args.alpha)
        names = list(out)
        for j, c in enumerate(args.key):  # the caller's column names
            out[c] = out.pop(names[j])
        write_columns(args.output, {**{c: out[c] for c in args.key},
                             **{k: v for k, v in out.items() if k not in args.key}})
        progress.step("written")
    finally:
        progress.close()
    thr = "" if rel.threshold is None else f", threshold {rel.threshold}"
    print(f"released {len(rel)} keys to {args.output} ({rel.event}{thr}; "
          f"{100 * (1 - args.alpha):g}% CI half-width {rel.law.halfwidth(args.alpha)})")
    if budget is not None:
        print(f"ledger {args.ledger}: {budget.remaining()}")
    return 0
