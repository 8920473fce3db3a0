"""``dpfast histogram``: a private histogram of one numeric column (CSV or Parquet).

Example::

    dpfast histogram people.csv --column age --bins 10 --range 0 100 --id person \\
        --epsilon 0.5 -o ages.csv

The bins are public (``--bins`` equal-width bins over ``--range``, numpy's edges, as
:func:`dpfast.histogram`); values outside the range are not counted.  One row per person
unless ``--id`` names the privacy unit (then at most ``--max-partitions`` bins and
``--max-per-partition`` rows per bin are kept per person).  Writes one row per bin:
``bin_low``, ``bin_high``, ``count``, ``ci_low``, ``ci_high`` (level ``1 - alpha``).  With
``--ledger`` the release is charged first (as ``dpfast count``).
"""

from __future__ import annotations

import argparse

import numpy as np

from dpfast.cli import CliError
from dpfast.cli._checks import (
    add_person_options,
    add_use_case,
    check_columns,
    check_epsilon,
    check_person,
    for_display,
    halfwidth_text,
)
from dpfast.cli._io import (
    budget_sentence,
    check_output,
    open_budget,
    read_columns,
    read_key_file,
    refused,
    write_columns,
)

HELP = "release a private histogram of a numeric column from a CSV/Parquet file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="CSV or Parquet file, one row per record")
    parser.add_argument("--column", required=True, metavar="COL",
                        help="numeric column to bin")
    parser.add_argument("--bins", type=int, default=10, help="number of equal-width bins")
    parser.add_argument("--range", type=float, nargs=2, required=True, metavar=("LOW", "HIGH"),
                        help="public range of the bins (the data's min/max would not be "
                             "private)")
    add_person_options(parser)
    parser.add_argument("--epsilon", type=float, required=True, help="privacy parameter")
    add_use_case(parser)
    parser.add_argument("--max-partitions", type=int, default=1, metavar="K",
                        help="bins kept per person (with --id; default 1)")
    parser.add_argument("--max-per-partition", type=int, default=1, metavar="C",
                        help="rows kept per person and bin (with --id; default 1)")
    parser.add_argument("--nonnegative", action="store_true",
                        help="clip negative noisy counts to 0 (post-processing)")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="budget ledger to charge before any noise is drawn")
    parser.add_argument("--budget-epsilon", type=float, default=None,
                        help="epsilon of a NEW ledger (mixed accounting)")
    parser.add_argument("--budget-delta", type=float, default=None,
                        help="delta of a NEW ledger (default 1e-5, as every command; 0 for "
                             "pure DP)")
    parser.add_argument("--seed-key-file", default=None, metavar="FILE",
                        help="file with a 32-byte key to replay the noise (tests and audits)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="confidence intervals at level 1 - alpha (default 0.05)")
    parser.add_argument("-o", "--output", required=True,
                        help="output file: .csv, .parquet (pyarrow) or .xlsx (openpyxl)")


def run(args: argparse.Namespace) -> int:
    import dpfast

    if not (args.epsilon > 0 and args.epsilon < float("inf")):
        raise CliError("--epsilon must be a positive finite number")
    if args.bins < 1:
        raise CliError("--bins must be >= 1")
    lo, hi = args.range
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise CliError("--range must be two finite numbers LOW < HIGH")
    if not 0 < args.alpha < 1:
        raise CliError("--alpha must be in (0, 1)")
    check_person(args)
    check_epsilon(args.epsilon, args.use_case)
    if args.id is not None and args.id == args.column:
        raise CliError("--id must not be the --column")
    check_output(args.output)
    key = read_key_file(args.seed_key_file)
    check_columns(args.input, {"--column": [args.column], "--id": [args.id] if args.id else []})
    cols = read_columns(args.input, [args.column] + ([args.id] if args.id else []))
    text = np.asarray(cols[args.column])
    try:
        x = text.astype(np.float64)
    except (TypeError, ValueError):
        for i, v in enumerate(text.tolist()):
            try:
                float(v)
            except (TypeError, ValueError):
                raise CliError(f"--column {args.column!r}: row {i + 1} is not a number: "
                               f"{v!r}") from None
        raise
    if np.isnan(x).any():
        i = int(np.flatnonzero(np.isnan(x))[0])
        raise CliError(f"--column {args.column!r}: row {i + 1} is missing (NaN)")
    opened = open_budget(args)
    try:
        hist, edges, rel = dpfast.histogram(
            x, bins=args.bins, range=(lo, hi), epsilon=args.epsilon,
            privacy_ids=cols[args.id] if args.id else None,
            max_partitions=args.max_partitions, max_per_partition=args.max_per_partition,
            nonnegative=args.nonnegative, rng=key, budget=opened.budget,
            note=f"dpfast histogram {args.input}", return_release=True)
    except dpfast.BudgetExceededError as exc:
        raise refused(opened, exc) from None
    ci_low, ci_high = rel.confidence_interval(args.alpha)
    write_columns(args.output, for_display(args.output, {
        "bin_low": edges[:-1], "bin_high": edges[1:], "count": hist, "ci_low": ci_low,
        "ci_high": ci_high}))
    print(f"released a histogram of {args.bins} bins to {args.output}: {args.epsilon:g}-DP; "
          + halfwidth_text(rel.law.halfwidth(args.alpha), args.alpha)
          + (", before clipping at 0" if args.nonnegative else ""))
    if opened.note:
        print(opened.note)
    if opened.budget is not None:
        print(budget_sentence(opened))
        opened.budget.close()
    return 0
