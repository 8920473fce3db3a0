"""The session's data source: one private table behind a DuckDB connection (a pandas or
Polars DataFrame, Parquet files, a DuckDB database table), or a Dask DataFrame.

:class:`Source` gives the session what it needs of the data and nothing more: the column
names, the rows of some columns that pass a filter (as numpy arrays, fetched by DuckDB),
and a *fingerprint* of those columns for the result cache.

**The engine.**  Row queries run on a DuckDB connection dpfast owns and locks
(:mod:`dpfast.session._engine`: no external access but the registered files, no
extension, configuration locked; only the private table and the public tables in its
catalog).  A DataFrame is registered on it (read in place; a privacy-unit column of Python
objects encoded id by id, :mod:`dpfast.session._ids`), Parquet files through a view
(the files are its only ``allowed_paths``), and a DuckDB table -- a database file or the
owner's connection, which dpfast cannot lock without changing the owner's database -- is
*copied* into it (:func:`dpfast.session._engine.copy_table`), once per version of the
table and only when a release reads rows through SQL: that costs the table's size in
memory; the schema, the column cache and the fingerprint read the owner's table
directly (dpfast's own fixed SQL).

**The fingerprint**, computed for every release (never memoised: a frame changed in
place, a table changed, a file rewritten is a new source):

* a DataFrame (pandas / Polars) or a DuckDB connection: a content digest computed by
  DuckDB over the columns read (row count and the sum of DuckDB's 64-bit ``hash`` of each
  row's relevant columns, a digest of the multiset of rows), with the DuckDB version;
* Parquet files and DuckDB database files: their *stamps* (:meth:`Source.stamps`): each
  file's absolute path, size, modification and status-change times (nanoseconds), inode
  and device -- a rewrite cannot restore the status-change time (``os.utime`` sets it to
  now) -- and a digest of content the format changes on every write (a Parquet file's
  footer: its schema, row groups and column statistics; a DuckDB file's headers: the
  checkpoint counter and the metadata pointers), and the table name; their decoded
  columns are kept in a bounded column cache valid for the same stamps
  (:mod:`dpfast.session._colcache`);
* a Dask DataFrame: :func:`dask.base.tokenize` of the relevant columns (for a frame built
  from pandas data, a hash of the data; for files, of the files' names and metadata).

DuckDB, pandas, Polars and Dask are imported here only when a source of that kind is made.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import threading
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from . import _colcache, _engine, _frame, _ids
from ._stamps import Stamp
from ._stamps import file_stamp as _file_stamp

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from duckdb import DuckDBPyConnection

__all__ = ["Source", "make_source", "quote"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: DuckDB types whose ``fetchnumpy`` arrays equal Arrow's ``to_numpy`` (dtype and values)
_NUMPY_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT",
                          "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR"})


def quote(name: str) -> str:
    """A SQL identifier, double-quoted."""
    return '"' + name.replace('"', '""') + '"'


def _table_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what} must be a plain SQL name (letters, digits, _), got {name!r}")
    return name


def _duckdb() -> types.ModuleType:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is in the test extra
        raise ImportError("dpfast.Session needs DuckDB: pip install 'dpfast[session]'") from exc
    return duckdb


def _is_pandas(x: object) -> bool:
    return type(x).__module__.startswith("pandas") and hasattr(x, "columns")


def _is_polars(x: object) -> bool:
    return type(x).__module__.startswith("polars") and hasattr(x, "columns")


def _is_dask(x: object) -> bool:
    return type(x).__module__.startswith("dask") and hasattr(x, "columns")


class Source:
    """One private table (see the module docstring)."""

    def __init__(self, kind: str, name: str, con: DuckDBPyConnection | None = None,
                 frame: pd.DataFrame | dd.DataFrame | None = None,
                 files: Sequence[str] = (), table: str | None = None,
                 owner: DuckDBPyConnection | None = None) -> None:
        self.kind = kind
        self.name = name
        self._con = con           # the DuckDB connection rows are read on (None for Dask)
        self.frame = frame        # the Dask DataFrame, or the pandas one (read in place)
        self.files = tuple(files)  # Parquet files or the DuckDB database file
        self.table = table
        #: a DuckDB table's own connection (the owner's, or a read-only one to the file):
        #: the table is copied from it into ``con`` (:meth:`_sync`); None: ``con`` has it
        self.owner = owner
        self.public: frozenset[str] = frozenset()  # public tables on the same connection
        self._copy: tuple[object, bool] | None = None  # (version copied, with its rows)
        #: the owner's table's version at the last fingerprint (rows, content digest)
        self._owner_key: tuple[int, str] | None = None
        #: a DataFrame registered on ``con`` (pandas or Polars): registered again before
        #: every read, since DuckDB keeps the arrays it saw at registration
        self.registered: object = None
        #: the privacy-unit column: a DataFrame's column of Python objects is registered
        #: encoded id by id and its ids decoded when read (:mod:`dpfast.session._ids`)
        self.unit: str | None = None
        self._sync_lock = threading.Lock()
        self._schema: tuple[list[Stamp], dict[str, str]] | None = None  # (stamps, types)
        self._frame_columns: tuple[tuple[object, ...], list[str]] | None = None
        #: the decoded columns of a file source (None: not a file source, or disabled)
        self.column_cache: _colcache.ColumnCache | None = None

    @property
    def con(self) -> DuckDBPyConnection:
        """The DuckDB connection rows are read on (a Dask source has none: ValueError)."""
        if self._con is None:
            raise ValueError("a Dask source has no SQL row access (use the release methods)")
        return self._con

    # ----------------------------------------------------------------- schema
    @property
    def columns(self) -> list[str]:
        if self.kind == "dask":
            assert self.frame is not None  # a Dask source is its frame
            return [str(c) for c in self.frame.columns]
        if self.files:
            return list(self.schema(self.stamps()))
        if self.kind == "pandas":  # memoised while the frame keeps its column labels
            assert self.frame is not None  # a pandas source reads its frame in place
            labels = tuple(self.frame.columns)
            if self._frame_columns is None or self._frame_columns[0] != labels:
                names = self.con.sql(f"SELECT * FROM {quote(self.name)} LIMIT 0").columns
                self._frame_columns = (labels, list(names))
            return list(self._frame_columns[1])
        return list(self._meta.sql(f"SELECT * FROM {quote(self._meta_name)} LIMIT 0").columns)

    @property
    def _meta(self) -> DuckDBPyConnection:
        """The connection dpfast's own fixed SQL reads the table on (schema, columns,
        digests): the owner's for a DuckDB table, else the engine."""
        return self.owner if self.owner is not None else self.con

    @property
    def _meta_name(self) -> str:
        return self.table if self.owner is not None and self.table else self.name

    def schema(self, stamps: list[Stamp]) -> dict[str, str]:
        """The private table's column names and DuckDB types, memoised for a file source
        while its files keep the stamps ``stamps`` (:meth:`stamps`)."""
        if self.files and self._schema is not None and self._schema[0] == stamps:
            return self._schema[1]
        rel = self._meta.sql(f"SELECT * FROM {quote(self._meta_name)} LIMIT 0")
        got = {c: str(t) for c, t in zip(rel.columns, rel.types)}
        if self.files:
            self._schema = (stamps, got)
        return got

    def stamps(self) -> list[Stamp]:
        """A file source's files as ``[abspath, size, mtime_ns, ctime_ns, inode, device,
        content mark]`` each (:func:`_file_stamp`; and a DuckDB file's WAL, if there is
        one): a rewritten file has other stamps; ``[]`` for other sources.  The column
        cache and the fingerprint use these same stamps."""
        stamps = [_file_stamp(f) for f in self.files]
        if self.kind == "duckdb-file":
            wal = self.files[0] + ".wal"
            if os.path.exists(wal):
                stamps.append(_file_stamp(wal))
        return stamps

    def check_columns(self, cols: Sequence[str], what: str = "column") -> None:
        have = set(self.columns)
        for c in cols:
            if c not in have:
                raise ValueError(f"{what} {c!r} is not a column of {self.name!r} "
                                 f"(columns: {', '.join(sorted(have))})")

    # ----------------------------------------------------------------- rows
    def fetch(self, cols: Sequence[str], where: str | None = None,
              not_null: Sequence[str] = (), limit: int | None = None
              ) -> dict[str, np.ndarray]:
        """The rows of ``cols`` that pass the SQL filter ``where`` and whose ``not_null``
        columns are not NULL, as numpy arrays (DuckDB's order of the table's rows); at
        most ``limit`` rows (0: none, only the columns' types, :meth:`fetch_sql`); the
        privacy-unit column's ids as their values (:attr:`unit`)."""
        if self.kind == "dask":
            raise ValueError("a Dask source has no SQL row access (use the release methods)")
        conds = [f"({where})"] if where else []
        conds += [f"{quote(c)} IS NOT NULL" for c in dict.fromkeys(not_null)]
        sql = f"SELECT {', '.join(quote(c) for c in dict.fromkeys(cols))} FROM {quote(self.name)}"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        return self.fetch_sql(sql, limit, ids=[c for c in cols if c == self.unit])

    def _numpy(self, sql: str) -> dict[str, np.ndarray]:
        """The result columns of ``sql`` as numpy arrays.

        When every result column has a type whose numpy form DuckDB and Arrow agree on
        (:data:`_NUMPY_TYPES`: integers, floats, booleans, strings) and no value is NULL,
        DuckDB writes the rows straight into numpy arrays (``fetchnumpy``: one copy, half
        the time of the Arrow route at 10^7 rows); otherwise (dates, decimals, NULLs...)
        through Arrow (:meth:`_via_arrow`).  Both give the same arrays for the first kind
        (``tests/test_session_fetch.py``).
        """
        rel = self.con.sql(sql)
        if all(str(t) in _NUMPY_TYPES for t in rel.types):
            res = rel.fetchnumpy()
            if not any(isinstance(a, np.ma.MaskedArray) and a.mask.any()
                       for a in res.values()):
                return {c: np.asarray(a.data if isinstance(a, np.ma.MaskedArray) else a)
                        for c, a in res.items()}
        return self._via_arrow(sql)

    def _via_arrow(self, sql: str) -> dict[str, np.ndarray]:
        """The result columns of ``sql`` through Arrow where pyarrow is installed (the
        session extra), else DuckDB's ``fetchnumpy``."""
        try:
            import pyarrow  # noqa: F401
        except ImportError:  # pragma: no cover - pyarrow is in the session extra
            res = self.con.execute(sql).fetchnumpy()
            return {c: np.asarray(a.data if isinstance(a, np.ma.MaskedArray) else a)
                    for c, a in res.items()}
        table = self.con.sql(sql).to_arrow_table()
        out = {}
        for name, col in zip(table.column_names, table.columns):
            arr = col.combine_chunks()
            out[name] = np.asarray(arr.to_numpy(zero_copy_only=False))
        return out

    def fetch_sql(self, sql: str, limit: int | None = None,
                  ids: Sequence[str] = ()) -> dict[str, np.ndarray]:
        """The columns of a row query (built by :mod:`dpfast.session`) as arrays, read on
        the locked engine; at most ``limit`` rows.  ``sql`` must be one ``SELECT``
        (ValueError otherwise, :func:`dpfast.session._engine.check_statement`).  The result
        columns ``ids`` hold the privacy-unit column: when the registered frame carries it
        encoded (:mod:`dpfast.session._ids`), their ids are decoded to their values.

        ``limit=0`` (the schema a release is planned on, before the charge) reads **no
        row**: the query is only bound (names and types resolved, nothing run), and the
        empty arrays come from a query of typed NULLs with no row and no table
        (:meth:`_shape`) -- so no filter, cast or join is evaluated on a private row
        before the charge."""
        if self.kind == "dask":
            raise ValueError("a Dask source has no SQL row access (use the release methods)")
        _engine.check_statement(self.con, sql)
        encoded = self._sync(rows=limit != 0)
        if limit == 0:
            return self._shape(sql)
        if limit is not None:
            sql = f"SELECT * FROM ({sql}) LIMIT {int(limit)}"
        got = self._numpy(sql)
        if encoded:
            for name in ids:
                if name in got:
                    got[name] = _ids.decode(got[name])
        return got

    def _shape(self, sql: str) -> dict[str, np.ndarray]:
        """The empty result columns of ``sql`` with the dtypes its rows would have,
        without running it: its relation is bound (DuckDB resolves names and types and
        reads no row), then ``SELECT CAST(NULL AS type) AS name, ... LIMIT 0`` -- no
        table -- goes through :meth:`_numpy` as the rows would."""
        rel = self.con.sql(sql)
        cells = ", ".join(("NULL" if str(t) == "NULL" else f"CAST(NULL AS {t})")
                          + f" AS {quote(c)}" for c, t in zip(rel.columns, rel.types))
        return self._numpy(f"SELECT {cells} LIMIT 0")

    def _sync(self, rows: bool) -> bool:
        """Make the engine's copy of a DuckDB table current (:attr:`owner`; nothing for
        other sources): the table's columns and types, and its rows if ``rows``.  The
        copy is remade when the table changed: a database file's stamps, an owner's
        connection's table digest (taken by :meth:`fingerprint`, which every release
        runs first).  A DataFrame is registered again (:meth:`_register`); True when it
        was registered with its privacy-unit column encoded."""
        encoded = self._register() if self.registered is not None else False
        if self.owner is None:
            return encoded
        with self._sync_lock:
            if self.kind == "duckdb-file":
                key: object = self.stamps()
            else:
                if self._owner_key is None:
                    self._content_hash(())
                key = self._owner_key
            if self._copy is not None and self._copy[0] == key and (self._copy[1] or not rows):
                return False
            assert self.table is not None
            _engine.copy_table(self.owner, self.table, self.con, self.name, rows)
            self._copy = (key, rows)
        return False

    def _register(self) -> bool:
        """Register the DataFrame again under the table's name: DuckDB reads the arrays it
        was given at registration, and a frame changed in place (pandas' copy-on-write
        gives a changed column new arrays) must be read as it is now.  A privacy-unit
        column of Python objects is registered encoded id by id
        (:func:`dpfast.session._ids.frame_view`: a shallow copy; the caller's frame is
        never changed); True when it is."""
        with self._sync_lock:
            view, encoded = _ids.frame_view(self.registered, self.unit)
            self.con.register(self.name, view)
            return encoded

    def select(self, cols: Sequence[str], where: str | None = None,
               limit: int | None = None) -> dict[str, np.ndarray]:
        """``fetch(cols, where, not_null=cols, limit=limit)``, from :meth:`plain_rows`
        (the frame in place, or the column cache) when there is no filter and it can
        answer: the same arrays either way."""
        if where is None:
            got = self.plain_rows({c: c for c in cols}, list(cols), limit)
            if got is not None:
                return got
        return self.fetch(cols, where, not_null=cols, limit=limit)

    def plain_rows(self, cols: dict[str, str], not_null: Sequence[str],
                   limit: int | None = None) -> dict[str, np.ndarray] | None:
        """The rows of a plain query (no join, no WHERE) without asking DuckDB, where the
        source allows: ``SELECT col AS name, ... WHERE col IS NOT NULL ...`` (``cols``:
        output name -> column; every column in ``not_null``) as DuckDB would return it --
        a pandas frame's columns read in place (:meth:`frame_rows`), a file source's
        columns from its column cache (:func:`dpfast.session._colcache.file_rows`;
        ``limit=0``: only the types, from columns already cached).  None: ask DuckDB."""
        if self.kind == "pandas":
            return self.frame_rows(cols, not_null, limit) if limit in (None, 0) else None
        if self.column_cache is None:
            return None
        return _colcache.file_rows(self, self.column_cache, cols, not_null, _NUMPY_TYPES,
                                   limit)

    def load_columns(self, names: Sequence[str]
                     ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """Whole columns of the private table, decoded by DuckDB in one scan, in the
        table's order: ``name -> (values, NULL mask or None)`` (values at NULL rows are
        arbitrary; NaN is a value).  For columns of :data:`_NUMPY_TYPES`: the dtypes and
        values ``fetchnumpy`` gives the row queries."""
        sql = f"SELECT {', '.join(quote(c) for c in names)} FROM {quote(self._meta_name)}"
        res = self._meta.sql(sql).fetchnumpy()
        out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        for name, a in zip(names, res.values()):
            null = None
            if isinstance(a, np.ma.MaskedArray):
                mask = np.ma.getmaskarray(a)
                null = mask if mask.any() else None
                a = a.data
            out[name] = (np.asarray(a), null)
        return out

    def frame_rows(self, cols: dict[str, str], not_null: Sequence[str],
                   limit: int | None = None) -> dict[str, np.ndarray] | None:
        """A pandas source's columns ``cols`` (output name -> column) of the rows whose
        ``not_null`` columns hold a value, read from the frame (numbers in place: no copy
        unless a row is dropped): the arrays DuckDB gives for ``SELECT col AS name ...
        WHERE col IS NOT NULL ...`` (DuckDB reads a pandas NaN / None / NA as NULL), in
        the frame's row order.  None (then DuckDB answers) unless every column is in
        ``not_null`` and is a numpy bool, integer, float32 or float64 column
        (:data:`dpfast.session._frame.FRAME_DTYPES`: dtypes DuckDB returns unchanged) or
        a column of strings (pandas' string dtype, or objects that are all str or missing)
        (``tests/test_session_fetch.py``).  ``limit=0``: no rows, the types only (numpy
        columns and pandas' string dtype; None for object columns).  The frame read is the
        one DuckDB is given (:func:`dpfast.session._ids.frame_view`), and the privacy-unit
        column's ids are decoded as :meth:`fetch_sql` decodes them: the same arrays."""
        if self.kind != "pandas" or self.frame is None:
            return None
        view, encoded = _ids.frame_view(self.frame, self.unit)
        got = _frame.frame_rows(view, cols, not_null, limit)
        if got is not None and encoded:
            for name, c in cols.items():
                if c == self.unit:
                    got[name] = _ids.decode(got[name])
        return got

    # ----------------------------------------------------------------- fingerprint
    def fingerprint_public(self, name: str) -> str:
        """The content digest of a whole public table (computed on every call: a public
        frame changed in place is another table)."""
        duckdb = _duckdb()
        names = self.con.sql(f"SELECT * FROM {quote(name)} LIMIT 0").columns
        cells = ", ".join(quote(c) for c in names)
        n, h = self.con.sql(
            f"SELECT count(*), coalesce(sum(hash({cells})::HUGEINT), 0)::VARCHAR "
            f"FROM {quote(name)}").fetchall()[0]
        return _digest(["public", name, duckdb.__version__, int(n), h])

    def fingerprint(self, cols: Sequence[str]) -> str:
        """A fingerprint of the relevant columns ``cols`` (see the module docstring),
        computed now: every release calls it before it reads a row."""
        cols = tuple(sorted(set(cols)))
        if self.kind in ("parquet", "duckdb-file"):
            return _digest([self.kind, self.table, self.stamps(), cols])
        return self._content_hash(cols)

    def rows_fingerprint(self, cols: Sequence[str], query: str,
                         public: Sequence[str] = ()) -> str:
        """The fingerprint of the rows a release reads (a release spec's ``rows``): the
        relevant columns' :meth:`fingerprint`, the public tables joined
        (:meth:`fingerprint_public`) and the row query dpfast generates (its filter and
        joins, :func:`dpfast.session._query.rows_sql`) -- the same for a method call and
        an SQL aggregate reading the same rows."""
        return _digest(["rows", self.fingerprint(cols),
                        [self.fingerprint_public(t) for t in public], query])

    def _content_hash(self, cols: tuple[str, ...]) -> str:
        """The content digest of ``cols`` (a multiset digest of the rows' values, by
        DuckDB: row count and the 128-bit sum of each row's 64-bit ``hash``; a total
        function of the values: it cannot fail on them).  For an owner's DuckDB table, the
        same scan digests every column too: the version :meth:`_sync` compares."""
        if self.kind == "dask":
            from dask.base import tokenize

            assert self.frame is not None  # a Dask source is its frame
            return _digest(["dask", tokenize(self.frame[list(cols)]), cols])
        duckdb = _duckdb()
        cells = ", ".join(quote(c) for c in cols) or "1"
        sums = [f"coalesce(sum(hash({cells})::HUGEINT), 0)::VARCHAR"]
        if self.owner is not None:
            every = ", ".join(quote(c) for c in self.columns) or "1"
            sums.append(f"coalesce(sum(hash({every})::HUGEINT), 0)::VARCHAR")
        try:
            if self.registered is not None:
                self._register()
            got = self._meta.sql(f"SELECT count(*), {', '.join(sums)} "
                                 f"FROM {quote(self._meta_name)}").fetchall()[0]
        except Exception:  # noqa: BLE001 - whatever it is, it may not tell before the charge
            # rows DuckDB cannot read (a frame's object column holding a value of another
            # type than its sample): this runs before the charge, so no error may tell;
            # a fingerprint that never repeats makes it a miss, charged, whose computation
            # then fails with the one fixed failure
            self._owner_key = None
            return _digest(["unreadable", os.urandom(16).hex()])
        if self.owner is not None:
            self._owner_key = (int(got[0]), got[2])
        return _digest([self.kind, duckdb.__version__, int(got[0]), got[1], cols])


def _digest(obj: object) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


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
                     frame=source if _is_pandas(source) else None)
        src.unit = privacy_unit if isinstance(privacy_unit, str) else None
        src.registered = source
        src._register()
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
                            f"read_parquet('{_sql_str(os.path.abspath(os.fspath(frame)))}')")
        else:
            src.con.register(pname, frame)
    _engine.lock(src.con)
    src.public = frozenset(public)
    if src.files and column_cache:
        src.column_cache = _colcache.ColumnCache(column_cache)
    return src


def _sql_str(s: str) -> str:
    return s.replace("'", "''")


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
        lst = ", ".join(f"'{_sql_str(f)}'" for f in full)
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
