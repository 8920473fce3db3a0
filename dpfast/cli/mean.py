"""``dpfast mean``: release a group-by mean of a numeric column (CSV or Parquet);
an alias of ``dpfast release mean``.

Example::

    dpfast mean visits.csv --value stay --bounds 0 14 --key city --id person \\
        --epsilon 1 --domain cities.csv -o means.csv

Each value is clamped to ``--bounds`` (public); see :mod:`dpfast.cli._table` for what the
table commands share (bounding, domain or private key selection, intervals, the
``--ledger`` budget) and :func:`dpfast.tables.mean` for the guarantee.
"""

from __future__ import annotations

import argparse

from dpfast.cli import _table

HELP = "release a private group-by mean of a numeric column from a CSV/Parquet file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _table.add_arguments(parser, "mean")


def run(args: argparse.Namespace) -> int:
    return _table.run(args, "mean")
