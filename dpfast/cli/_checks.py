"""Checks the release commands (``count``, ``sum``, ``mean``, ``histogram``, ``topdown``)
share: who the person is (``--id`` or an explicit ``--record-level``), an epsilon outside
the conventional ranges (``--use-case``), unknown column names, and numbers rounded for
display in CSV output.  All run before the charge, on public information only (the
options and the file's header)."""

from __future__ import annotations

import argparse
import csv
import difflib
import os
import sys
from typing import Any

import numpy as np

from dpfast.cli import CliError

__all__ = ["add_person_options", "add_use_case", "check_columns", "check_epsilon",
           "check_person", "for_display", "halfwidth_text"]

#: Significant digits of the numbers written to CSV (the Python objects keep them all).
DIGITS = 6


def add_person_options(parser: argparse.ArgumentParser) -> None:
    """``--id COL`` and ``--record-level``: one of them is required."""
    parser.add_argument("--id", default=None, metavar="COL",
                        help="privacy-id column (the person): each person's rows are bounded "
                             "together (required, unless --record-level)")
    parser.add_argument("--record-level", action="store_true",
                        help="every row is a different person (no --id): the guarantee is "
                             "per row, weaker when a person has several rows")


def check_person(args: argparse.Namespace) -> None:
    """Refuse record data with neither ``--id`` nor ``--record-level`` (a silent
    one-row-one-person guarantee is wrong whenever a person has several rows)."""
    if args.id is not None and args.record_level:
        raise CliError("give --id COL or --record-level, not both")
    if args.id is None and not args.record_level:
        raise CliError("--id COL is required: name the column that identifies the person "
                       "(each person's rows are then bounded together); if every row is a "
                       "different person, pass --record-level")


def add_use_case(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--use-case", default=None, metavar="NAME",
                        help="a use case of dpfast.guidelines (e.g. healthcare, "
                             "government_statistics): warn when epsilon leaves its "
                             "conventional range (without it: warn above every use case's "
                             "range)")


def check_epsilon(epsilon: float, use_case: str | None, what: str = "--epsilon") -> None:
    """A warning on stderr (never an error) when ``epsilon`` is above the conventional
    range of ``use_case`` (or below it), or, without one, above every use case's range
    (:mod:`dpfast.guidelines`); an unknown use case is an error."""
    from dpfast import guidelines

    if use_case is not None:
        try:
            u = guidelines.use_case(use_case)
        except ValueError as exc:
            raise CliError(f"--use-case: {exc}") from None
        if u.low <= epsilon <= u.high:
            return
        side = "above" if epsilon > u.high else "below"
        print(f"warning: {what} {epsilon:g} is {side} the range {u.low:g}-{u.high:g} "
              f"conventional for {u.name.lower()} (dpfast.guidelines); record why this "
              "choice is appropriate", file=sys.stderr)
        return
    top = max(guidelines.USE_CASES.values(), key=lambda u: u.high)
    if epsilon > top.high:
        print(f"warning: {what} {epsilon:g} is above every conventional range of "
              f"dpfast.guidelines (the highest: {top.low:g}-{top.high:g} for "
              f"{top.name.lower()}): at this epsilon the noise hides little; give "
              "--use-case to check against yours", file=sys.stderr)


def _header(path: str) -> list[str] | None:
    """The column names of a CSV or Parquet file (None: not readable here; the reader
    reports it)."""
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".parquet":
            import pyarrow.parquet as pq  # type: ignore[import-untyped]

            return list(pq.read_schema(path).names)
        if ext in (".csv", ".txt"):  # the header as the reader sees it (pandas if there)
            try:
                import pandas as pd
            except ImportError:  # pragma: no cover - pandas is in the test extra
                with open(path, newline="", encoding="utf-8-sig") as fh:
                    return next(csv.reader(fh), [])
            return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except Exception:  # unreadable here: the reader reports it
        return None
    return None


def check_columns(path: str, wanted: dict[str, list[str]]) -> None:
    """Refuse column names the file does not have, naming them as unknown, with the
    option that gave each, the closest existing name and the file's columns."""
    have = _header(path)
    if have is None:
        return
    bad = [(opt, c) for opt, cols in wanted.items() for c in cols if c not in have]
    if not bad:
        return
    parts = []
    for opt, c in bad:
        near = difflib.get_close_matches(c, have, n=1)
        parts.append(f"{opt} {c!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    shown = ", ".join(have[:20]) + (", ..." if len(have) > 20 else "")
    raise CliError(f"unknown column{'s' if len(bad) > 1 else ''} in {path}: "
                   f"{'; '.join(parts)}. Its columns are: {shown}")


def _round(a: np.ndarray, how: str) -> np.ndarray:
    """Float values to :data:`DIGITS` significant digits (``how``: nearest, down, up)."""
    out = np.array(a, dtype=np.float64, copy=True)
    ok = np.isfinite(out) & (out != 0)
    if not ok.any():
        return out
    mag = np.floor(np.log10(np.abs(out[ok])))
    scale = 10.0 ** (DIGITS - 1 - mag)
    v = out[ok] * scale
    r = np.round(v) if how == "nearest" else np.floor(v) if how == "down" else np.ceil(v)
    if how != "nearest":  # keep a value that is already short (floor(1.0 * 1e5) ...)
        r = np.where(np.abs(v - np.round(v)) <= 1e-9 * np.abs(v), np.round(v), r)
    out[ok] = r / scale
    return out


def for_display(path: str, columns: dict[str, Any]) -> dict[str, Any]:
    """``columns`` with float numbers rounded to :data:`DIGITS` significant digits when
    written as CSV (interval ends outward: ``ci_low*`` down, ``ci_high*`` up, so the
    written interval still contains the computed one); other formats unchanged."""
    if path.lower().endswith((".parquet", ".xlsx")):
        return columns
    out = {}
    for name, col in columns.items():
        a = np.asarray(col)
        if a.dtype.kind != "f":
            out[name] = col
            continue
        how = ("down" if name.startswith("ci_low") else
               "up" if name.startswith("ci_high") else "nearest")
        out[name] = _round(a, how)
    return out


def halfwidth_text(width: Any, alpha: float, unit: str = "") -> str:
    """``"95% interval half-width 6: each value within +-6 of the truth"``."""
    w = np.asarray(width)
    if w.ndim == 0 or w.size == 1:
        v = float(w.reshape(-1)[0]) if w.ndim else float(w)
        text = f"{int(v)}" if float(v).is_integer() and abs(v) < 2**53 else f"{v:.4g}"
    else:
        text = f"{float(np.min(w)):.4g} to {float(np.max(w)):.4g}"
    conf = f"{100 * (1 - alpha):g}%"
    return (f"{conf} interval half-width {text}{unit} (each value within +-{text} of the "
            f"truth with {conf} confidence)")

