"""``dpfast topdown``: release every level of a geographic hierarchy (TopDown).

Example::

    dpfast topdown blocks.csv --level state --level county --level block --count pop \\
        --rho 0.5 -o out/

reads leaf counts (one row per leaf; several rows of one finest unit are summed) with one
geography column per level, coarse to fine (a unit is identified by its own column *and*
its ancestors', so county "001" of two states are two counties), runs
:func:`dpfast.tables.topdown` and writes ``out/level_<j>_<column>.csv`` (or ``.parquet``)
per level: the geography columns down to that level, per ``--count`` column the released
count (``<count>_released``: consistent, non-negative, integral: publish this one) and the
raw noisy measurement (``<count>_measured``, for audit), plus
``out/privacy.json`` with the privacy spent.  A single national total is added as level 0
unless ``--no-root``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any

import numpy as np

from dpfast.cli import CliError, check_writable, write_atomic
from dpfast.cli._checks import add_use_case, check_columns, check_epsilon, for_display
from dpfast.cli._io import (
    budget_sentence,
    open_budget,
    read_columns,
    read_key_file,
    refused,
    write_columns,
)

HELP = "release a geographic hierarchy consistent, non-negative and integral (TopDown)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="CSV or Parquet file of leaf counts (.csv / .parquet)")
    parser.add_argument("--level", action="append", required=True, metavar="COL",
                        help="geography column, coarse to fine (repeat: one per level)")
    parser.add_argument("--count", action="append", default=None, metavar="COL",
                        help="count column (repeat for several cells; default: 'count')")
    parser.add_argument("--rho", type=float, nargs="+", required=True,
                        help="zCDP budget: a total split equally over the levels, or one "
                             "value per level (including the root unless --no-root)")
    add_use_case(parser)
    parser.add_argument("--no-root", action="store_true",
                        help="do not add a national total as level 0")
    parser.add_argument("--no-nonnegative", action="store_true",
                        help="allow negative released counts")
    parser.add_argument("--no-integer", action="store_true",
                        help="release floats instead of integers")
    parser.add_argument("--total-invariant", action="store_true",
                        help="release the level-0 total exactly (NOT private for it)")
    parser.add_argument("--seed-key-file", default=None,
                        help="file with a 32-byte key to replay the noise (whoever holds it "
                             "can remove the noise: tests and audits only)")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="budget ledger charged before any noise is drawn (a refusal "
                             "writes nothing, exit 1)")
    parser.add_argument("--budget-epsilon", type=float, default=None,
                        help="epsilon of a NEW ledger (mixed accounting)")
    parser.add_argument("--budget-delta", type=float, default=None,
                        help="delta of a NEW ledger (default 1e-5, as every command; 0 for "
                             "pure DP); with an existing ledger it must match the ledger's")
    parser.add_argument("--format", choices=["csv", "parquet"], default=None,
                        help="output format (default: the input's)")
    parser.add_argument("-o", "--output", required=True, help="output directory")


def _counts(values: np.ndarray, name: str) -> np.ndarray:
    """Non-negative integer counts from a column (text from CSV, numbers from Parquet)."""
    if values.dtype.kind in "iu":
        out = values.astype(np.int64)
        bad = out < 0
    else:
        try:
            f = values.astype(np.float64)
        except (TypeError, ValueError):
            f = None
        if f is None:  # find the row that is not a number, for the message
            for i, v in enumerate(values.tolist()):
                try:
                    float(v)
                except (TypeError, ValueError):
                    raise CliError(f"count column {name!r}: row {i + 1} is not a number: "
                                   f"{v!r}") from None
            raise CliError(f"count column {name!r} is not numeric")  # pragma: no cover
        bad = ~np.isfinite(f) | (f < 0) | (f != np.floor(f)) | (f >= 2.0**53)
        out = np.where(bad, 0, f).astype(np.int64)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CliError(f"count column {name!r}: row {i + 1} is not a count (a non-negative "
                       f"integer): {values[i]!r}")
    return out


def _check_order(names: list[str], codes: list[np.ndarray], ids: list[np.ndarray]) -> None:
    """Refuse levels given fine to coarse: a level whose column splits none of the previous
    level's units and has fewer distinct values than that level has units is coarser than
    it (e.g. ``--level county --level state``: every county lies in one state)."""
    for j in range(1, len(names)):
        n_prev = int(ids[j - 1].max()) + 1 if ids[j - 1].size else 0
        n_here = int(ids[j].max()) + 1 if ids[j].size else 0
        distinct = int(codes[j].max()) + 1 if codes[j].size else 0
        if n_here == n_prev and distinct < n_prev:
            raise CliError(
                f"--level {names[j]} is coarser than --level {names[j - 1]} (each of the "
                f"{n_prev} {names[j - 1]} units lies in one of {distinct} {names[j]} "
                "values): give the levels coarse to fine, e.g. "
                + " ".join(f"--level {n}" for n in [names[j], names[j - 1]]))


def _hierarchy(cols: list[np.ndarray], names: list[str] | None = None
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Level ids (nested: a unit is its column value within its parent) and, per level,
    the index of the first leaf of each unit (for the labels).  With ``names``, levels
    given out of order (fine before coarse) are refused."""
    ids: list[np.ndarray] = []
    first: list[np.ndarray] = []
    all_codes: list[np.ndarray] = []
    prev = np.zeros(cols[0].shape[0], np.int64)
    for c in cols:
        _, codes = np.unique(c.astype(str), return_inverse=True)
        all_codes.append(codes.astype(np.int64))
        m = int(np.max(codes)) + 1 if codes.size else 1
        combined = prev * m + codes.astype(np.int64)
        _, idx, inv = np.unique(combined, return_index=True, return_inverse=True)
        ids.append(inv.astype(np.int64))
        first.append(idx)
        prev = inv.astype(np.int64)
    if names is not None:
        _check_order(names, all_codes, ids)
    return ids, first


def _pld_epsilon(release: Any, delta: float) -> float | None:
    """The release's epsilon by the PLD accountant (exact discrete Gaussians); None where a
    level's noise is beyond its range."""
    from dpfast.accounting.pld import UnsupportedEventError

    try:
        return float(release.epsilon(delta, accounting="pld"))
    except UnsupportedEventError:
        return None


def run(args: argparse.Namespace) -> int:
    import dpfast
    from dpfast import tables

    counts_cols = args.count or ["count"]
    geo = list(args.level)
    if len(set(geo + counts_cols)) != len(geo) + len(counts_cols):
        raise CliError("--level and --count columns must be distinct")
    fmt = args.format or ("parquet" if args.input.lower().endswith(".parquet") else "csv")
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise CliError(f"output {args.output} exists and is not a directory")
    top = os.path.abspath(args.output)
    while not os.path.exists(top):  # the directories makedirs would create
        top = os.path.dirname(top)
    if not os.path.isdir(top):
        raise CliError(f"cannot create {args.output}: {top} is not a directory")
    check_writable(os.path.join(top, "privacy.json"))
    check_columns(args.input, {"--level": geo, "--count": counts_cols})
    data = read_columns(args.input, geo + counts_cols)
    n = data[geo[0]].shape[0]
    if n == 0:
        raise CliError(f"{args.input} has no rows")
    leaf = np.stack([_counts(data[c], c) for c in counts_cols], axis=1)
    ids, first = _hierarchy([data[c] for c in geo], geo)
    labels = geo
    if not args.no_root:
        ids = [np.zeros(n, np.int64)] + ids
        first = [np.zeros(1, np.int64)] + first
        labels = ["(total)"] + geo
    rho: Any = args.rho[0] if len(args.rho) == 1 else list(args.rho)
    if all(math.isfinite(r) and r >= 0 for r in args.rho) and sum(args.rho) > 0:
        from dpfast import guidelines
        from dpfast.accounting.zcdp import zcdp_epsilon

        total = float(sum(args.rho)) if len(args.rho) > 1 else float(args.rho[0])
        check_epsilon(float(zcdp_epsilon(total, guidelines.ZCDP_DELTA)), args.use_case,
                      what=f"epsilon (rho {total:g} at delta {guidelines.ZCDP_DELTA:g})")
    if args.total_invariant and isinstance(rho, list) and len(rho) == len(ids) - 1:
        rho = [0.0] + rho
    key = read_key_file(args.seed_key_file)
    opened = open_budget(args)
    try:
        release = tables.topdown(
            leaf, ids, rho=rho, nonnegative=not args.no_nonnegative,
            integer=not args.no_integer, total_invariant=args.total_invariant, rng=key,
            budget=opened.budget, note=f"dpfast topdown {args.input}",
        )
    except dpfast.BudgetExceededError as exc:
        raise refused(opened, exc) from None
    except BaseException:
        if opened.budget is not None and not opened.budget.history():
            opened.discard_if_new()  # nothing charged: leave no ledger behind
        raise
    os.makedirs(args.output, exist_ok=True)
    written = []
    for j in range(len(ids)):
        cols: dict[str, np.ndarray] = {}
        geo_here = geo[: j + 1] if args.no_root else geo[:j]
        for g in geo_here:
            cols[g] = np.asarray(data[g])[first[j]].astype(str)
        est = release.estimates[j]
        noisy = release.noisy[j]
        for c, name in enumerate(counts_cols):
            cols[f"{name}_released"] = est[:, c]
            cols[f"{name}_measured"] = (noisy[:, c] if noisy is not None
                                        else np.full(est.shape[0], "", dtype=object))
        fname = f"level_{j}_{labels[j].strip('()')}.{fmt}"
        path = os.path.join(args.output, fname)
        write_columns(path, for_display(fname, cols), parquet=fmt == "parquet")
        written.append(fname)
    privacy = {
        "mechanism": "TopDown: discrete Gaussian per level, least squares, non-negative "
                     "integer rounding (dpfast.tables.topdown)",
        "rho": release.rho_total,
        "rho_per_level": release.rho,
        "sigma_per_level": release.sigma,
        "epsilon_at_delta_1e-10": release.epsilon(1e-10),
        "epsilon_at_delta_1e-6": release.epsilon(1e-6),
        "epsilon_pld_at_delta_1e-10": _pld_epsilon(release, 1e-10),
        "epsilon_pld_at_delta_1e-6": _pld_epsilon(release, 1e-6),
        "event": release.event.to_dict(),
        "total_invariant": release.total_invariant,
        "neighbouring": "add or remove one record (one leaf count changes by 1)",
        "files": written,
    }
    text = json.dumps(privacy, indent=2)

    def write_json(tmp: str) -> None:
        with open(tmp, "w") as fh:
            fh.write(text + "\n")

    write_atomic(os.path.join(args.output, "privacy.json"), write_json)
    print(release.summary())
    print(f"wrote {len(written)} tables and privacy.json to {args.output}")
    if opened.note:
        print(opened.note)
    if opened.budget is not None:
        print(budget_sentence(opened))
        opened.budget.close()
    return 0
