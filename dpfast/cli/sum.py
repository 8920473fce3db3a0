"""``dpfast sum``: release a group-by sum of a numeric column (CSV or Parquet);
an alias of ``dpfast release sum``.

Example::

    dpfast sum visits.csv --value stay --bounds 0 14 --key city --id person \\
        --epsilon 1 --domain cities.csv -o sums.csv

Each value is clamped to ``--bounds`` (public); see :mod:`dpfast.cli._table` for what the
table commands share (bounding, domain or private key selection, intervals, the
``--ledger`` budget) and :func:`dpfast.tables.sum` for the guarantee.
"""

from __future__ import annotations

import argparse

from dpfast.cli import _table

HELP = "release a private group-by sum of a numeric column from a CSV/Parquet file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _table.add_arguments(parser, "sum")


def run(args: argparse.Namespace) -> int:
    return _table.run(args, "sum")
