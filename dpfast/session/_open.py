"""Opening a session's data source: what the caller gives (a pandas or Polars DataFrame,
Parquet file(s) or a glob, a DuckDB database file or connection, a Dask DataFrame)
recognised, the locked engine connection made for it (:mod:`dpfast.session._engine`:
a DataFrame registered on it, Parquet files behind a view, a DuckDB table's owner kept
for the copy), the public tables registered beside it, and the :class:`Source` that
reads it (:mod:`dpfast.session._source`).

Everything here is checked from public information (names, paths, types) before any
release.
"""

from __future__ import annotations

import glob
import os
import re
import types

from . import _colcache, _engine
from ._engine import quote, sql_str
from ._source import Source, _duckdb

__all__ = ["make_source"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _table_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what} must be a plain SQL name (letters, digits, _), got {name!r}")
    return name


def _is_pandas(x: object) -> bool:
    return type(x).__module__.startswith("pandas") and hasattr(x, "columns")


def _is_polars(x: object) -> bool:
    return type(x).__module__.startswith("polars") and hasattr(x, "columns")


def _is_dask(x: object) -> bool:
    return type(x).__module__.startswith("dask") and hasattr(x, "columns")


def make_source(source: object, *, table: str | None = None, name: str | None = None,
                public: dict[str, object] | None = None,
                column_cache: int = _colcache.DEFAULT_BUDGET,
                privacy_unit: str | None = None) -> Source:
    """Wrap ``source`` (see :class:`dpfast.Session`); ``public`` tables are registered on
    the same (locked) DuckDB connection for SQL joins, under names that shadow no other
    table (ValueError naming the public table); a file source gets a column cache of
    ``column_cache`` bytes (0: none).  ``privacy_unit``: the column of the privacy unit
    (a DataFrame's column of Python objects is read id by id, :attr:`Source.unit`)."""
    column_cache = _colcache.check_budget(column_cache)
    public = dict(public or {})
    if _is_dask(source):
        if public:
            raise ValueError("public tables need a DuckDB-backed source, not a Dask one")
        return Source("dask", _table_name(name or "data", "name"), frame=source)
    duckdb = _duckdb()
    for pname in public:
        _table_name(pname, "public table name")
    public_files = [os.path.abspath(os.fspath(f)) for f in public.values()
                    if isinstance(f, (str, os.PathLike))]
    if isinstance(source, duckdb.DuckDBPyConnection):
        if table is None:
            raise ValueError("a DuckDB connection needs table= (the private table's name)")
        tname = _table_name(table, "table")
        src = Source("duckdb", tname, con=_engine.connect(duckdb, public_files), table=tname,
                     owner=source)
    elif _is_pandas(source) or _is_polars(source):
        con = _engine.connect(duckdb, public_files)
        nm = _table_name(name or "data", "name")
        src = Source("pandas" if _is_pandas(source) else "polars", nm, con=con,
                     frame=source if _is_pandas(source) else None, registered=source,
                     unit=privacy_unit if isinstance(privacy_unit, str) else None)
    elif isinstance(source, (str, os.PathLike)) or (
            isinstance(source, (list, tuple)) and source
            and all(isinstance(s, (str, os.PathLike)) for s in source)):
        paths = [os.fspath(s) for s in (source if isinstance(source, (list, tuple))
                                         else [source])]
        src = _file_source(duckdb, paths, table, name, public_files)
    else:
        raise TypeError("source must be a pandas or Polars DataFrame, a Dask DataFrame, "
                        "Parquet file(s), a DuckDB database file or connection, got "
                        f"{type(source).__name__}")
    _engine.check_names(src.name, public, src.con)
    for pname, frame in public.items():
        if isinstance(frame, (str, os.PathLike)):
            src.con.execute(f"CREATE OR REPLACE TEMP VIEW {quote(pname)} AS SELECT * FROM "
                            f"read_parquet({sql_str(os.path.abspath(os.fspath(frame)))})")
        else:
            src.con.register(pname, frame)
    _engine.lock(src.con)
    src.public = frozenset(public)
    if src.files and column_cache:
        src.column_cache = _colcache.ColumnCache(column_cache)
    return src


def _file_source(duckdb: types.ModuleType, paths: list[str], table: str | None, name: str | None,
                 public_files: list[str]) -> Source:
    files: list[str] = []
    for p in paths:
        hits = sorted(glob.glob(p)) if any(ch in p for ch in "*?[") else [p]
        if not hits:
            raise FileNotFoundError(f"no file matches {p}")
        files.extend(hits)
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"source file not found: {f}")
    if all(f.endswith(".parquet") for f in files):
        full = [os.path.abspath(f) for f in files]
        con = _engine.connect(duckdb, full + public_files)
        stem = os.path.splitext(os.path.basename(files[0]))[0]
        nm = _table_name(name or (stem if _NAME.match(stem) else "data"), "name")
        lst = ", ".join(sql_str(f) for f in full)
        con.execute(f"CREATE VIEW {quote(nm)} AS SELECT * FROM read_parquet([{lst}])")
        return Source("parquet", nm, con=con, files=files, table=nm)
    if len(files) != 1:
        raise ValueError("several source files must all be Parquet (.parquet)")
    owner = duckdb.connect(files[0], read_only=True)
    tables = [r[0] for r in owner.execute(
        "SELECT table_name FROM information_schema.tables").fetchall()]
    if table is None:
        if len(tables) != 1:
            raise ValueError(f"{files[0]} holds {len(tables)} tables; name one with table= "
                             f"({', '.join(sorted(tables))})")
        table = tables[0]
    tname = _table_name(table, "table")
    if tname not in tables:
        raise ValueError(f"table {tname!r} is not in {files[0]} ({', '.join(sorted(tables))})")
    return Source("duckdb-file", tname, con=_engine.connect(duckdb, public_files),
                  files=files, table=tname, owner=owner)
