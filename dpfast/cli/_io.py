"""Shared input/output of the table commands (``count``, ``topdown``): reading columns of
a CSV/Parquet file, writing a table atomically, and opening the ``--ledger`` budget."""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from dpfast.cli import CliError, write_atomic

__all__ = ["read_columns", "write_columns", "open_budget", "read_key_file"]


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


def write_columns(path: str, columns: dict[str, np.ndarray], *,
                  parquet: bool | None = None) -> None:
    """Write ``columns`` as a CSV file, or as Parquet (``parquet=True``, or by default a
    path ending in ``.parquet``); atomically (:func:`dpfast.cli.write_atomic`)."""
    if parquet is None:
        parquet = path.lower().endswith(".parquet")

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
        import csv

        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(list(columns))
            w.writerows(zip(*(np.asarray(v).tolist() for v in columns.values())))

    write_atomic(path, write)


def open_budget(args: argparse.Namespace, accounting: str) -> Any:
    """The ``--ledger`` Budget (None without one): an existing file is reopened with its
    own definition (:meth:`dpfast.Budget.from_ledger`); a new one needs
    ``--budget-epsilon`` (and ``--budget-delta``) and gets ``accounting``."""
    import dpfast

    path = args.ledger
    if path is None:
        if args.budget_epsilon is not None:
            raise CliError("--budget-epsilon needs --ledger")
        return None
    if os.path.exists(path):
        return dpfast.Budget.from_ledger(path)
    if args.budget_epsilon is None:
        raise CliError(f"ledger {path} does not exist: give --budget-epsilon (and "
                       "--budget-delta) to create it")
    return dpfast.Budget(args.budget_epsilon, args.budget_delta, ledger=path,
                         accounting=accounting)


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
