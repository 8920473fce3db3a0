"""``dpfast release STATISTIC``: release any registered statistic per key from records.

One subcommand per statistic of :data:`dpfast.tables.statistics.REGISTRY` (``count``,
``sum``, ``mean``, ...), its options made from the statistic's attributes
(:func:`dpfast.cli._table.add_arguments`); ``dpfast count`` / ``sum`` / ``mean`` are
aliases of ``dpfast release count`` / ``sum`` / ``mean``.  Example::

    dpfast release sum visits.csv --value stay --bounds 0 14 --key city --id person \\
        --epsilon 1 --domain cities.csv -o sums.csv

``dpfast release --help`` lists the statistics; ``dpfast release STATISTIC --help`` their
options.  See :mod:`dpfast.cli._table` for what the table commands share.
"""

from __future__ import annotations

import argparse

from dpfast.cli import _table

HELP = "release a registered statistic per key (count, sum, mean, ...) from a CSV/Parquet file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from dpfast.tables.statistics import REGISTRY

    sub = parser.add_subparsers(dest="statistic", metavar="STATISTIC", required=True,
                                title="statistics (one subcommand each)",
                                help="the statistic to release (its options: "
                                     "dpfast release STATISTIC --help)")
    for name, stat in REGISTRY.items():
        what = stat.summary or name
        p = sub.add_parser(name, help=what,
                           description=f"release the {name} ({what}) of a CSV/Parquet file "
                                       "of records, with bounded contributions")
        _table.add_arguments(p, name)


def run(args: argparse.Namespace) -> int:
    return _table.run(args, args.statistic)
