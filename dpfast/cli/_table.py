"""The group-by table commands: ``dpfast release STATISTIC`` (every registered statistic,
:data:`dpfast.tables.statistics.REGISTRY`) and its aliases ``count``, ``sum``, ``mean``.

The options come from the statistic's attributes (``--value`` for a statistic that reads a
value column, ``--bounds`` for one that needs bounds, ``--<param>`` for each of its own
parameters, ``--nonnegative`` for a statistic whose truth is never negative, the release
parameters it takes). Each command reads one row per record, bounds each person's
contribution (``--id``, required; ``--record-level`` states that every row is a different
person), releases ``dpfast.tables.<statistic>`` -- over the keys listed
in ``--domain`` (public keys), or chosen privately by thresholding (needs ``--delta``) --
and writes the table with confidence intervals (``--alpha``) as CSV (numbers rounded to 6
significant digits, interval ends outward), Parquet or Excel (by the output's extension).
``--use-case`` warns when epsilon leaves its conventional range; unknown column names are
refused as unknown. Keys are read as text; a bounded or numeric ``--value`` as numbers
(integers stay integers), another ``--value`` as text. With ``--ledger`` the release is
charged to a budget ledger first (a new ledger needs ``--budget-epsilon``; an existing one
keeps its own definition, and options that disagree with it are refused); a refusal writes
nothing, exits 1, and removes a ledger this run created.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import sys
import time
from typing import Any

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


def _statistic(name: str) -> Any:
    from dpfast.tables.statistics import REGISTRY, REQUIRED

    return REGISTRY[name], REQUIRED


def _literal(text: str) -> Any:
    """A parameter's value: a Python literal (``0.5``, ``[0.25, 0.75]``, ``None``) or the
    text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def add_arguments(parser: argparse.ArgumentParser, statistic: str) -> None:
    """The options of the table command of the registered ``statistic``."""
    stat, required = _statistic(statistic)
    parser.add_argument("input", help="CSV or Parquet file, one row per record")
    if stat.value:
        what = (f"numeric column to {statistic} (clamped to --bounds)" if stat.bounds
                else f"{'numeric ' if stat.numeric else ''}column of the values ({statistic})")
        parser.add_argument("--value", required=True, metavar="COL", help=what)
    if stat.bounds:
        parser.add_argument("--bounds", type=float, nargs=2,
                            required=stat.bounds_default is required,
                            metavar=("LOW", "HIGH"),
                            help="public bounds of one value (each value is clamped to them)")
    for name, default in stat.params.items():
        opt = "--" + name.replace("_", "-")
        need = default is required
        what = stat.param_help.get(name, f"the statistic's parameter {name}")
        parser.add_argument(opt, dest=f"param_{name}", type=_literal, required=need,
                            default=None if need else default, metavar="VALUE",
                            help=f"{what} (a Python literal"
                                 + ("" if need else f"; default {default!r}") + ")")
    parser.add_argument("--key", action="append", required=True, metavar="COL",
                        help="key column to group by (repeat for multi-column keys)")
    add_person_options(parser)
    parser.add_argument("--epsilon", type=float, required=True,
                        help="privacy parameter epsilon of the release")
    add_use_case(parser)
    parser.add_argument("--delta", type=float, default=0.0,
                        help="delta (needed without --domain: private partition selection)")
    parser.add_argument("--max-partitions", type=int, default=1, metavar="K",
                        help="keys kept per person (default 1)")
    if "max_per_partition" in stat.common:
        parser.add_argument("--max-per-partition", type=int, default=1, metavar="C",
                            help="rows kept per person and key (default 1)")
    if stat.nonnegative:
        parser.add_argument("--nonnegative", action="store_true",
                            help="clip negative noisy counts (and interval ends) at 0: "
                                 "post-processing, no privacy cost")
    parser.add_argument("--domain", default=None, metavar="FILE",
                        help="CSV/Parquet file of the public keys (same column names as "
                             "--key): exactly these keys are released")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="budget ledger to charge before any noise is drawn")
    parser.add_argument("--budget-epsilon", type=float, default=None,
                        help="epsilon of a NEW ledger (mixed accounting); with an existing "
                             "ledger it must match the ledger's")
    parser.add_argument("--budget-delta", type=float, default=None,
                        help="delta of a NEW ledger (default 1e-5, as every command; 0 for "
                             "pure DP); with an existing ledger it must match the ledger's")
    parser.add_argument("--seed-key-file", default=None, metavar="FILE",
                        help="file with a 32-byte key to replay the noise (whoever holds it "
                             "can remove the noise: tests and audits only)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="confidence intervals at level 1 - alpha (default 0.05)")
    parser.add_argument("--no-progress", action="store_true",
                        help="never show a progress bar")
    parser.add_argument("-o", "--output", required=True,
                        help="output file: .csv, .parquet (pyarrow) or .xlsx (openpyxl)")


class _Progress:
    """Stage progress on stderr (tqdm if installed), shown only for slow inputs and only
    when stderr is a terminal."""

    def __init__(self, enabled: bool, total: int, name: str) -> None:
        self.bar = None
        self.enabled = enabled
        self.name = name
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=f"dpfast {name}", unit="step",
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
            print(f"dpfast {self.name}: {name}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _numbers(values: np.ndarray, name: str) -> np.ndarray:
    """A numeric column: int64 when every value is an integer, else float64."""
    if values.dtype.kind in "iuf":
        return values
    text = [str(v).strip() for v in values.tolist()]
    try:
        return np.array([int(v) for v in text], dtype=np.int64)
    except (ValueError, OverflowError):
        pass
    out = np.empty(len(text))
    for i, v in enumerate(text):
        try:
            out[i] = float(v)
        except ValueError:
            raise CliError(f"--value column {name!r}: row {i + 1} is not a number: "
                           f"{v!r}") from None
    return out


def _check_options(args: argparse.Namespace, statistic: str) -> None:
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
        if getattr(args, name, 1) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1")
    check_person(args)
    check_epsilon(args.epsilon, args.use_case)
    if args.id is not None and args.id in args.key:
        raise CliError("--id must not be a --key column")
    stat, _ = _statistic(statistic)
    if stat.value and (args.value in args.key or args.value == args.id):
        raise CliError("--value must not be a --key or --id column")
    if stat.bounds and args.bounds is not None:
        lo, hi = args.bounds
        if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
            raise CliError("--bounds must be two finite numbers LOW <= HIGH")
    check_output(args.output)


def run(args: argparse.Namespace, statistic: str) -> int:
    """Release the registered ``statistic`` as the options say; the exit code."""
    import dpfast
    from dpfast import tables

    stat, _ = _statistic(statistic)
    _check_options(args, statistic)
    key = read_key_file(args.seed_key_file)
    t0 = time.perf_counter()
    size = os.path.getsize(args.input)
    show = not args.no_progress and sys.stderr.isatty()  # never into captured output
    progress = _Progress(show and size > 50 * 2 ** 20, 3, statistic)
    value = [args.value] if stat.value else []
    check_columns(args.input, {"--key": args.key, "--value": value,
                               "--id": [args.id] if args.id else []})
    cols = read_columns(args.input, args.key + value + ([args.id] if args.id else []))
    if len(np.asarray(cols[args.key[0]])) == 0:
        raise CliError(f"{args.input} has no rows")
    domain = None
    if args.domain is not None:
        dcols = read_columns(args.domain, args.key, "domain")
        domain = tuple(dcols[c] for c in args.key) if len(args.key) > 1 \
            else dcols[args.key[0]]
    values = None
    if stat.value:
        numeric = stat.bounds or stat.numeric
        values = _numbers(cols[args.value], args.value) if numeric else cols[args.value]
    opened = open_budget(args)
    try:
        if time.perf_counter() - t0 > 2.0 and show and not progress.enabled:
            progress = _Progress(True, 2, statistic)
        progress.step("read")
        keys: Any = tuple(cols[c] for c in args.key) if len(args.key) > 1 \
            else cols[args.key[0]]
        ids = cols[args.id] if args.id else None
        common: dict[str, Any] = dict(
            epsilon=args.epsilon, delta=args.delta, max_partitions=args.max_partitions,
            max_per_partition=getattr(args, "max_per_partition", 1), domain=domain, rng=key,
            budget=opened.budget, note=f"dpfast {statistic} {args.input}")
        kwargs = {n: v for n, v in common.items() if n in stat.common}
        kwargs.update((n, getattr(args, f"param_{n}")) for n in stat.params)
        try:
            if stat.bounds and args.bounds is not None:
                assert values is not None
                lo, hi = args.bounds
                if values.dtype.kind in "iu" and float(lo).is_integer() \
                        and float(hi).is_integer():
                    kwargs["bounds"] = (int(lo), int(hi))
                else:
                    values = values.astype(np.float64)
                    kwargs["bounds"] = (lo, hi)
            fn = getattr(tables, statistic)
            rel = fn(*([values] if stat.value else []), keys, ids, **kwargs)
        except dpfast.BudgetExceededError as exc:
            raise refused(opened, exc) from None
        except BaseException:
            if opened.budget is not None and not opened.budget.history():
                opened.discard_if_new()  # nothing charged: leave no ledger behind
            raise
        progress.step("released")
        intervals = "alpha" in inspect.signature(rel.to_columns).parameters
        out = rel.to_columns(args.alpha) if intervals else rel.to_columns()
        names = list(out)
        nk = len(args.key)
        value_name = args.value if stat.value and stat.bounds else names[nk]
        table = {c: out[names[j]] for j, c in enumerate(args.key)}  # the caller's names
        table[value_name] = out[names[nk]]
        table.update((k, out[k]) for k in names[nk + 1:])
        if stat.nonnegative and args.nonnegative:  # post-processing: truth is >= 0
            for k in (value_name, "ci_low", "ci_high"):
                if k in table:
                    table[k] = np.maximum(table[k], 0)
        write_columns(args.output, for_display(args.output, table))
        progress.step("written")
    finally:
        progress.close()
    thr = "" if rel.threshold is None else \
        f"; keys chosen privately (threshold {rel.threshold} on the noisy count)"
    conf = f"{100 * (1 - args.alpha):g}%"
    law = getattr(rel, "law", None)
    if not intervals:  # a release without intervals (e.g. ranks: its accuracy())
        width = "no interval columns (see the Python release's accuracy())"
    elif not stat.law_interval or law is None:  # intervals that vary from key to key
        lo_, hi_ = rel.confidence_interval(args.alpha)
        width = f"{conf} intervals in the columns ci_low, ci_high"
        if len(rel):
            width += f" (mean half-width {float(np.mean((hi_ - lo_) / 2)):.4g})"
    else:
        width = halfwidth_text(law.halfwidth(args.alpha), args.alpha)
        if stat.nonnegative and args.nonnegative:
            width += ", before clipping at 0"
    print(f"released the {statistic} of {len(rel)} keys to {args.output}: "
          f"{_event_text(rel.event)}{thr}; {width}")
    if opened.note:
        print(opened.note)
    if opened.budget is not None:
        print(budget_sentence(opened))
        opened.budget.close()
    return 0


def _event_text(event: Any) -> str:
    """``"1-DP"`` / ``"(1, 1e-06)-DP"``: the release's (epsilon, delta), rounded up."""
    from dpfast.accounting import UnsupportedEventError
    from dpfast.accounting.pure import approx_dp

    try:
        eps, delta = approx_dp(event)
    except UnsupportedEventError:
        return f"privacy event {event}"
    return f"({eps:.6g}, {delta:.3g})-DP" if delta else f"{eps:.6g}-DP"
