"""Shared input/output of the table commands (``count``, ``sum``, ``mean``,
``histogram``, ``topdown``, ``query``): reading columns of a CSV/Parquet file, writing a
table atomically (CSV, Parquet or Excel), checking every output path against the inputs
before anything is released (:func:`check_paths`), and opening the ``--ledger`` budget."""

from __future__ import annotations

import argparse
import fnmatch
import glob
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from dpfast.cli._files import CliError, check_writable, write_atomic

__all__ = ["read_columns", "write_columns", "open_budget", "read_key_file", "OpenedBudget",
           "check_output", "OUTPUT_FORMATS", "budget_sentence", "refused", "check_paths"]

#: output extensions the table commands write
OUTPUT_FORMATS = (".csv", ".parquet", ".xlsx")


def read_columns(path: str, columns: list[str], what: str = "input") -> dict[str, np.ndarray]:
    """The named columns of a CSV (as text) or Parquet file."""
    if not os.path.exists(path):
        raise OSError(f"{what} file not found: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise CliError("reading Parquet needs pyarrow: pip install 'dpfast[parquet]'") \
                from exc
        table = pq.read_table(path)
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise CliError(f"column(s) not in {path}: {', '.join(missing)}")
        return {c: table.column(c).to_numpy(zero_copy_only=False) for c in columns}
    if ext not in (".csv", ".txt"):
        raise CliError(f"{what} must be .csv or .parquet, got {path}")
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the test extra
        pd = None
    if pd is not None:
        head = pd.read_csv(path, nrows=0)
        missing = [c for c in columns if c not in head.columns]
        if missing:
            raise CliError(f"column(s) not in {path}: {', '.join(missing)}")
        df = pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False,
                         engine="c")
        return {c: df[c].to_numpy(dtype=object) for c in columns}
    import csv  # pragma: no cover

    with open(path, newline="") as fh:  # pragma: no cover
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise CliError(f"column(s) not in {path}: {', '.join(missing)}")
        rows = list(reader)
    return {c: np.array([r[c] for r in rows], dtype=object) for c in columns}  # pragma: no cover


#: commands whose ``--output`` is a directory, and the names they write in it
DIRECTORY_OUTPUTS: dict[str, tuple[str, ...]] = {"topdown": ("level_*", "privacy.json")}
#: the files beside a ledger that belong to it
_LEDGER_FILES = ("", "-wal", "-shm", "-journal", "-anchor")


def _input_paths(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """``(option, path)`` of every file a command reads (or keeps: the ledger)."""
    for option in ("input", "file", "domain", "seed_key_file"):
        value = getattr(args, option, None)
        if isinstance(value, str):
            paths = sorted(glob.glob(value)) if glob.has_magic(value) else [value]
            for p in paths or [value]:
                yield option, p
    ledger = getattr(args, "ledger", None)
    if isinstance(ledger, str):
        for suffix in _LEDGER_FILES:
            yield "ledger", ledger + suffix
    for item in getattr(args, "public", None) or []:
        if isinstance(item, str) and "=" in item:
            yield "public", item.partition("=")[2]


def _same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name one file: the same resolved path (symbolic links followed),
    or, when both exist, the same inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist
        return False


def check_paths(args: argparse.Namespace, command: str) -> None:
    """Refuse, before anything is read or charged, an output that would overwrite an
    input: ``--output`` equal to (or a symbolic or hard link of) the input file, the
    ``--domain`` / ``--public`` / key files, or the ledger and its companion files (for
    a command that writes a directory, :data:`DIRECTORY_OUTPUTS`: a file it would write
    there); and a file output whose directory is missing or not writable."""
    out = getattr(args, "output", None)
    if not isinstance(out, str):
        return
    option_name = {"input": "the input", "file": "the ledger", "domain": "--domain",
                   "seed_key_file": "--seed-key-file", "ledger": "the --ledger",
                   "public": "--public"}
    names = DIRECTORY_OUTPUTS.get(command)
    for option, path in _input_paths(args):
        if names is None:
            clash = _same_file(out, path)
        else:
            real = os.path.realpath(path)
            clash = (os.path.dirname(real) == os.path.realpath(out)
                     and any(fnmatch.fnmatch(os.path.basename(real), n) for n in names))
        if clash:
            what = "directory would overwrite" if names is not None else "is"
            raise CliError(f"output {out} {what} {option_name[option]} file {path}: write "
                           "the result to another file (nothing was read or charged)")
    if names is None:
        check_writable(out)


def check_output(path: str) -> None:
    """Refuse, before anything is released, an output the table commands cannot write: an
    unknown extension, a missing or read-only directory, Excel without openpyxl."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in OUTPUT_FORMATS:
        raise CliError(f"output {path}: use a .csv, .parquet or .xlsx file name")
    if ext == ".xlsx":
        try:
            import openpyxl  # noqa: F401
        except ImportError:
            raise CliError("writing Excel (.xlsx) needs openpyxl: pip install openpyxl "
                           "(or write .csv)") from None
    check_writable(path)


def write_columns(path: str, columns: dict[str, np.ndarray], *,
                  parquet: bool | None = None) -> None:
    """Write ``columns`` as a CSV file, as Parquet (``parquet=True``, or by default a path
    ending in ``.parquet``) or as Excel (a path ending in ``.xlsx``, needs openpyxl);
    atomically (:func:`dpfast.cli.write_atomic`)."""
    if parquet is None:
        parquet = path.lower().endswith(".parquet")
    excel = not parquet and path.lower().endswith(".xlsx")

    def write(tmp: str) -> None:
        if parquet:
            try:
                import pyarrow as pa  # type: ignore[import-untyped]
                import pyarrow.parquet as pq  # type: ignore[import-untyped]
            except ImportError as exc:
                raise CliError("writing Parquet needs pyarrow: pip install "
                               "'dpfast[parquet]'") from exc
            pq.write_table(pa.table({k: np.asarray(v) for k, v in columns.items()}), tmp)
            return
        if excel:
            try:
                import openpyxl
            except ImportError as exc:
                raise CliError("writing Excel (.xlsx) needs openpyxl: pip install "
                               "openpyxl") from exc
            book = openpyxl.Workbook()
            sheet = book.active
            sheet.title = "dpfast"
            sheet.append(list(columns))
            for row in zip(*(np.asarray(v).tolist() for v in columns.values())):
                sheet.append(list(row))
            book.save(tmp)
            return
        import csv

        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(list(columns))
            w.writerows(zip(*(np.asarray(v).tolist() for v in columns.values())))

    write_atomic(path, write)


class OpenedBudget:
    """The ``--ledger`` budget of one command run: ``budget`` (None without a ledger) and
    whether this run created the file (``created``), so that a refused first release can
    remove it again (:meth:`discard_if_new`)."""

    def __init__(self, budget: Any, path: str | None, created: bool, note: str = "") -> None:
        self.budget = budget
        self.path = path
        self.created = created
        self.note = note

    def discard_if_new(self) -> bool:
        """Close the budget and, if this run created its ledger, delete it (the release was
        refused or failed before anything was written).  True if a file was removed."""
        if self.budget is None:
            return False
        self.budget.close()
        if not self.created or self.path is None:
            return False
        removed = False
        for suffix in ("", "-wal", "-shm", "-journal", "-anchor"):
            try:
                os.unlink(self.path + suffix)
                removed = True
            except FileNotFoundError:
                pass
        return removed


def _same(a: float, b: float) -> bool:
    return float(a) == float(b)


def open_budget(args: argparse.Namespace, accounting: str = "mixed",
                default_delta: float = 1e-5) -> OpenedBudget:
    """The ``--ledger`` budget: an existing file is reopened with its own definition
    (:meth:`dpfast.Budget.from_ledger`; an old ledger keeps its accounting) and
    ``--budget-epsilon`` / ``--budget-delta``, if given, must agree with it (refused
    otherwise, naming the difference); a new one needs ``--budget-epsilon`` and gets
    ``--budget-delta`` (default ``default_delta``) and ``accounting`` (default
    ``"mixed"``: pure, approximate and Gaussian releases in one ledger, so ``count`` with
    key selection and ``topdown`` can share it)."""
    import dpfast

    path = args.ledger
    given_delta = getattr(args, "budget_delta", None)
    if path is None:
        if args.budget_epsilon is not None or given_delta is not None:
            raise CliError("--budget-epsilon / --budget-delta need --ledger FILE")
        return OpenedBudget(None, None, False)
    if os.path.exists(path):
        budget = dpfast.Budget.from_ledger(path)
        diffs = []
        if args.budget_epsilon is not None and not _same(args.budget_epsilon, budget.epsilon):
            diffs.append(f"--budget-epsilon {args.budget_epsilon:g} but the ledger's epsilon "
                         f"is {budget.epsilon:g}")
        if given_delta is not None and not _same(given_delta, budget.delta):
            diffs.append(f"--budget-delta {given_delta:g} but the ledger's delta is "
                         f"{budget.delta:g}")
        if diffs:
            budget.close()
            raise CliError(f"ledger {path} exists with another budget: {'; '.join(diffs)}. "
                           "Drop the --budget-* options to use it as it is, or give a new "
                           "ledger file")
        return _bound(OpenedBudget(budget, path, False), args)
    if args.budget_epsilon is None:
        raise CliError(f"ledger {path} does not exist: give --budget-epsilon (and "
                       "--budget-delta) to create it")
    delta = default_delta if given_delta is None else given_delta
    if not (args.budget_epsilon > 0 and np.isfinite(args.budget_epsilon)):
        raise CliError("--budget-epsilon must be a positive finite number")
    if not 0 <= delta < 1:
        raise CliError("--budget-delta must be in [0, 1)")
    check_writable(path)
    budget = dpfast.Budget(args.budget_epsilon, delta, ledger=path, accounting=accounting)
    note = (f"created ledger {path}: epsilon {args.budget_epsilon:g}, delta {delta:g}"
            + (" (the default; --budget-delta to choose)" if given_delta is None else "")
            + f", {accounting} accounting")
    return _bound(OpenedBudget(budget, path, True, note), args)


#: the commands whose privacy unit is ``--id`` (None: one row is one person).  ``topdown``
#: reads leaf counts, with no person column: it neither binds nor checks the unit
_UNIT_COMMANDS = ("release", "count", "sum", "mean", "histogram")


def _bound(opened: OpenedBudget, args: argparse.Namespace) -> OpenedBudget:
    """``opened``, its ledger bound to the command's privacy unit (``--id``; none: one
    row) as a session binds it (:meth:`dpfast.Budget.bind_privacy_unit`); a ledger bound
    to another unit is refused before anything is read or charged."""
    if getattr(args, "cmd", None) not in _UNIT_COMMANDS:
        return opened  # query: its session binds the unit; ledger analysts: no release
    unit = getattr(args, "id", None)
    try:
        opened.budget.bind_privacy_unit(unit)
    except ValueError as exc:
        opened.discard_if_new()
        option = "no --id (one row is one person)" if unit is None else f"--id {unit}"
        raise CliError(f"{option}: {exc}".replace(f"privacy_unit {unit!r} is not", "that is "
                                                   "not"), 2) from None
    return opened


def _num(x: float) -> str:
    return f"{x + 0.0:.6g}"


def budget_sentence(opened: OpenedBudget) -> str:
    """What a release left of the ledger, as a sentence (never a repr, never -0.0)."""
    left = opened.budget.remaining()
    spent = opened.budget.spent()
    text = (f"ledger {opened.path}: spent epsilon {_num(spent.epsilon)}, delta "
            f"{_num(spent.delta)} of ({_num(opened.budget.epsilon)}, "
            f"{_num(opened.budget.delta)}); ")
    if left.exhausted:
        return text + "the budget is exhausted: no further release fits"
    extra = (f" (with delta up to {_num(left.delta)})"
             if left.accounting in ("basic", "mixed") else "")
    return text + f"a next release fits if its epsilon is at most {_num(left.epsilon)}{extra}"


def refused(opened: OpenedBudget, exc: Exception) -> CliError:
    """The exit-1 error of a budget refusal; a ledger this run created is removed."""
    removed = opened.discard_if_new()
    where = f" (ledger {opened.path} not created)" if removed else ""
    return CliError(f"budget refused the release, nothing written{where}: {exc}", 1)


def read_key_file(path: str | None) -> Any:
    """A generator keyed with the 32-byte key in ``--seed-key-file`` (None without one).

    A generator, not the raw key: the option's purpose is to *replay* a release (tests,
    audits), and a raw key never replays (each release gets a fresh release id,
    :mod:`dpfast.tables.keynoise`); a generator rebuilt from the key replays its releases.
    """
    if path is None:
        return None
    with open(path, "rb") as fh:
        key = fh.read()
    if len(key) != 32:
        raise CliError(f"--seed-key-file must hold exactly 32 bytes, got {len(key)}")
    from dpfast import random as _random

    return _random.default_rng(key)
