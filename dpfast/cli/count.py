"""``dpfast count``: release a group-by count from raw records (CSV or Parquet);
an alias of ``dpfast release count``.

Example::

    dpfast count visits.csv --key city --key age_band --id person --epsilon 1 \\
        --delta 1e-6 --max-partitions 3 -o counts.csv

See :mod:`dpfast.cli._table` for what the table commands share (bounding, domain or
private key selection, intervals, the ``--ledger`` budget).
"""

from __future__ import annotations

import argparse

from dpfast.cli import _table

HELP = "release a private group-by count table from a CSV/Parquet file of records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _table.add_arguments(parser, "count")


def run(args: argparse.Namespace) -> int:
    return _table.run(args, "count")
