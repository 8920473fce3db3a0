"""``dpfast query``: answer an aggregate SQL query privately over a data file.

Example::

    dpfast query flights.parquet --privacy-unit passenger --bounds arr_delay=-60:300 \\
        "SELECT dest, COUNT(*) AS n, AVG(arr_delay) AS delay FROM flights GROUP BY dest" \\
        --epsilon 1 --delta 1e-6 --ledger budget.db --analyst alice -o delays.csv

(the ledger's owner registers alice and her share first: ``dpfast ledger analysts add
budget.db alice --epsilon 2 --budget-epsilon 4``).

DATA is a Parquet file (or a glob of them), a DuckDB database (``--table`` names the
table) or a CSV file; the private table's name in the SQL is ``--name`` (default: the
DuckDB table, or the file's stem).  The query runs through :class:`dpfast.Session`: the
subset of :mod:`dpfast.session.sql`, the result cache (the same query on the same ledger
prints the stored answer and charges nothing), the analyst's sub-budget (``--analyst``:
an analyst registered in the ledger; an unknown name is refused).  Before anything is
charged: the output path (never an input or the ledger; its directory writable), the
analyst, the columns the query names (an unknown one is reported as unknown), and the
ledger's privacy unit (a ledger bound to another ``--privacy-unit`` is refused).  A
refused query (outside the subset) exits 2, a refused charge exits 1; nothing is written
then.  Hints name this command's options (``--bounds COL=LO:HI``, ``--domain``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from dpfast.cli import CliError

HELP = "answer an aggregate SQL query privately over a Parquet/DuckDB/CSV file (a session)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="Parquet file(s), DuckDB database or CSV file")
    parser.add_argument("sql", help="the query, e.g. \"SELECT k, COUNT(*) FROM t GROUP BY k\"")
    parser.add_argument("--privacy-unit", required=True, metavar="COL",
                        help="column naming the person of each row ('none': every row is "
                             "a different person)")
    parser.add_argument("--bounds", action="append", default=[], metavar="COL=LO:HI",
                        help="public bounds of a value column (repeat per column)")
    parser.add_argument("--domain", action="append", default=[], metavar="COL=K1,K2,...",
                        help="public keys of a group-by column (repeat per column); other "
                             "group-by columns use private key selection (--delta)")
    parser.add_argument("--public", action="append", default=[], metavar="NAME=FILE",
                        help="a public Parquet table the query may join with")
    parser.add_argument("--table", default=None, help="the table of a DuckDB database")
    parser.add_argument("--name", default=None,
                        help="the private table's name in the SQL (default: the DuckDB "
                             "table or the file's stem)")
    parser.add_argument("--epsilon", type=float, required=True,
                        help="epsilon of the query (split over its aggregates)")
    parser.add_argument("--delta", type=float, default=0.0,
                        help="delta of the query (private key selection)")
    parser.add_argument("--max-partitions", type=int, default=1, metavar="K",
                        help="keys kept per person (default 1)")
    parser.add_argument("--max-per-partition", type=int, default=1, metavar="C",
                        help="rows kept per person and key (default 1)")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="budget ledger (shared result cache and analysts beside it)")
    parser.add_argument("--budget-epsilon", type=float, default=None,
                        help="epsilon of a NEW ledger")
    parser.add_argument("--budget-delta", type=float, default=None,
                        help="delta of a NEW ledger (default 1e-5)")
    parser.add_argument("--analyst", default=None, metavar="NAME",
                        help="charge this analyst's sub-budget too (an analyst the ledger's "
                             "owner registered: dpfast ledger analysts add)")
    parser.add_argument("--seed-key-file", default=None, metavar="FILE",
                        help="file with a 32-byte key to replay the noise (tests, audits)")
    parser.add_argument("-o", "--output", default=None,
                        help="output file (.csv or .parquet); default: print the table")


def _pairs(items: list[str], option: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, rest = item.partition("=")
        if not sep or not name or not rest:
            raise CliError(f"{option} must be NAME=VALUE, got {item!r}")
        out.append((name, rest))
    return out


def _bounds(items: list[str]) -> dict[str, tuple[float, float]]:
    out = {}
    for col, rest in _pairs(items, "--bounds"):
        lo, sep, hi = rest.partition(":")
        try:
            b = (float(lo), float(hi))
        except ValueError:
            sep = ""
        if not sep:
            raise CliError(f"--bounds must be COL=LO:HI with numbers, got {col}={rest}")
        out[col] = (int(b[0]), int(b[1])) if all(x.is_integer() for x in b) else b
    return out


def _domain(items: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for col, rest in _pairs(items, "--domain"):
        keys = rest.split(",")
        try:
            out[col] = [int(k) for k in keys]
        except ValueError:
            out[col] = keys
    return out


def _source(path: str) -> Any:
    if path.lower().endswith(".csv"):
        import pandas as pd

        return pd.read_csv(path)
    return path


#: the session's hints in Python terms -> this command's options
_HINTS = (
    (re.compile(r"Session\(bounds=\{'([^']*)': \(lo, hi\)\}\)"), r"--bounds \1=LO:HI"),
    (re.compile(r"give bounds=\{'([^']*)': \(lo, hi\)\} to the session or bounds=\(lo, hi\)"),
     r"give --bounds \1=LO:HI"),
    (re.compile(r"\bdomains=( for these columns)?"), r"--domain COL=K1,K2,...\1"),
    (re.compile(r"(?<![-\w])delta > 0"), "--delta > 0"),
    (re.compile(r"\bbounds column '"), "--bounds column '"),
    (re.compile(r"\bdomains column '"), "--domain column '"),
    (re.compile(r"\bprivacy_unit None\b"), "--privacy-unit none"),
    (re.compile(r"\bprivacy_unit '([^']*)'"), r"--privacy-unit \1"),
)


def cli_terms(message: str) -> str:
    """A session's message with its Python hints (``Session(bounds=...)``,
    ``domains=``) in this command's options (``--bounds COL=LO:HI``, ``--domain``)."""
    for pattern, repl in _HINTS:
        message = pattern.sub(repl, message)
    return message


def _public_columns(public: dict[str, str]) -> set[str]:
    cols: set[str] = set()
    for path in public.values():
        try:
            import pyarrow.parquet as pq

            cols.update(pq.read_schema(path).names)
        except Exception:  # unreadable: the session reports it
            continue
    return cols


def check_columns(sql: str, columns: list[str], public: dict[str, str], table: str) -> None:
    """Refuse, naming it, a column of ``sql`` that is neither a column of the private
    table, of a public table, nor an output alias (public information: the schemas);
    a query sqlglot cannot parse is left to the session's refusal."""
    try:
        import sqlglot
        from sqlglot import exp

        tree = sqlglot.parse_one(sql, read="duckdb")
    except Exception:
        return
    if tree is None:
        return
    known = {c.lower() for c in columns} | {c.lower() for c in _public_columns(public)}
    known |= {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}  # any output
    for t in tree.find_all(exp.TableAlias):  # a CTE's or a derived table's column names
        known |= {c.name.lower() for c in t.columns}
    unknown = []
    for col in tree.find_all(exp.Column):
        name = col.name
        if not name or name == "*" or name.lower() in known or name in unknown:
            continue
        unknown.append(name)
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        raise CliError(f"unknown column{'s' if len(unknown) > 1 else ''} {names} in the "
                       f"query (columns of {table}: {', '.join(sorted(columns))})")


def run(args: argparse.Namespace) -> int:
    import dpfast
    from dpfast.budget.names import check_name
    from dpfast.cli._io import open_budget
    from dpfast.session import _store

    if args.output is not None and not args.output.lower().endswith((".csv", ".parquet")):
        raise CliError(f"output must end in .csv or .parquet, got {args.output}")
    bounds, domains = _bounds(args.bounds), _domain(args.domain)
    public = dict(_pairs(args.public, "--public"))
    if args.analyst is not None:
        check_name(args.analyst, "--analyst")
    if args.ledger is None:
        if args.budget_epsilon is not None or args.analyst is not None:
            raise CliError("--budget-epsilon and --analyst need --ledger FILE")
        opened = None
        budget = dpfast.Budget(args.epsilon, args.delta or None,
                               accounting=_store.default_accounting(args.delta))
    else:
        opened = open_budget(args, _store.default_accounting(args.delta))
        budget = opened.budget
        if args.analyst is not None and args.analyst not in budget.analysts():
            opened.discard_if_new()
            raise CliError(f"analyst {args.analyst} is not registered in ledger {args.ledger}: "
                           "its owner registers analysts and their shares with 'dpfast ledger "
                           f"analysts add {args.ledger} {args.analyst} --epsilon E'; naming an "
                           "analyst creates no budget")
    try:
        return _answer(args, dpfast, budget, opened, bounds, domains, public)
    except BaseException as exc:
        if opened is not None and opened.created and not _recorded(budget):
            opened.discard_if_new()  # nothing charged: leave no ledger behind
        if isinstance(exc, ValueError) and not isinstance(exc, dpfast.BudgetExceededError):
            raise CliError(cli_terms(str(exc))) from None
        raise


def _recorded(budget: Any) -> bool:
    """The budget has records (True also when it is closed already: a refusal)."""
    try:
        return bool(budget.history(include_refused=True))
    except ValueError:
        return True


def _answer(args: argparse.Namespace, dpfast: Any, budget: Any, opened: Any,
            bounds: dict[str, Any], domains: dict[str, Any], public: dict[str, str]) -> int:
    from dpfast.cli._io import read_key_file, refused, write_columns

    unit = None if args.privacy_unit.lower() == "none" else args.privacy_unit
    name = args.name
    if name is None and not args.input.lower().endswith((".duckdb", ".db")):
        stem = os.path.splitext(os.path.basename(args.input))[0]
        name = stem if stem.isidentifier() else None
    session = dpfast.Session(_source(args.input), privacy_unit=unit, bounds=bounds,
                             domains=domains, budget=budget, table=args.table, name=name,
                             rng=read_key_file(args.seed_key_file), public=public,
                             max_partitions=args.max_partitions,
                             max_per_partition=args.max_per_partition)
    check_columns(args.sql, list(session._source.columns), public, session._source.name)
    who = session
    if args.analyst is not None:
        who = session.analyst(args.analyst)
    before = session.usage().hits
    try:
        result = who.sql(args.sql, epsilon=args.epsilon, delta=args.delta)
    except dpfast.BudgetExceededError as exc:
        if opened is not None:
            raise refused(opened, exc) from None
        raise CliError(f"budget refused the release, nothing written: {exc}", 1) from None
    table = result.to_pandas()
    cached = session.usage().hits - before
    if args.output is None:
        print(table.to_string(index=False))
    else:
        write_columns(args.output, {c: table[c].to_numpy() for c in table.columns})
        print(f"wrote {len(table)} rows to {args.output}")
    spent = budget.spent()
    note = (f"{cached} of {len(result.releases)} aggregates from the cache (no charge); "
            if cached else "")
    print(f"{note}budget spent: epsilon {spent.epsilon:.4g} of {budget.epsilon:g}"
          + (f" (ledger {args.ledger})" if args.ledger else ""), file=sys.stderr)
    if session.bound_unit and args.ledger:
        what = "one row" if unit is None else f"column {unit!r}"
        print(f"ledger {args.ledger}: bound to the privacy unit {what} (every later "
              "release on it must use the same --privacy-unit)", file=sys.stderr)
    session.close()
    return 0
