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

A source is made from what the caller gives by :func:`dpfast.session._open.make_source`.
DuckDB, pandas, Polars and Dask are imported here only when a source of that kind is made.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from . import _colcache, _engine, _fetch, _frame, _ids
from ._engine import quote
from ._stamps import Stamp
from ._stamps import file_stamp as _file_stamp

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from duckdb import DuckDBPyConnection

__all__ = ["Source"]

def _duckdb() -> types.ModuleType:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is in the test extra
        raise ImportError("dpfast.Session needs DuckDB: pip install 'dpfast[session]'") from exc
    return duckdb


class Source:
    """One private table (see the module docstring)."""

    def __init__(self, kind: str, name: str, con: DuckDBPyConnection | None = None,
                 frame: pd.DataFrame | dd.DataFrame | None = None,
                 files: Sequence[str] = (), table: str | None = None,
                 owner: DuckDBPyConnection | None = None, registered: object = None,
                 unit: str | None = None) -> None:
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
        #: a DataFrame registered on ``con`` (pandas or Polars): registered here and again
        #: before every read, since DuckDB keeps the arrays it saw at registration
        self.registered = registered
        #: the privacy-unit column: a DataFrame's column of Python objects is registered
        #: encoded id by id and its ids decoded when read (:mod:`dpfast.session._ids`)
        self.unit = unit
        self._sync_lock = threading.Lock()
        self._schema: tuple[list[Stamp], dict[str, str]] | None = None  # (stamps, types)
        self._frame_columns: tuple[tuple[object, ...], list[str]] | None = None
        #: the decoded columns of a file source (None: not a file source, or disabled)
        self.column_cache: _colcache.ColumnCache | None = None
        if registered is not None:
            self._register()

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
        (:func:`~dpfast.session._fetch.empty_columns`) -- so no filter, cast or join is
        evaluated on a private row before the charge."""
        if self.kind == "dask":
            raise ValueError("a Dask source has no SQL row access (use the release methods)")
        _engine.check_statement(self.con, sql)
        encoded = self._sync(rows=limit != 0)
        if limit == 0:
            return _fetch.empty_columns(self.con, sql)
        if limit is not None:
            sql = f"SELECT * FROM ({sql}) LIMIT {int(limit)}"
        got = _fetch.numpy_columns(self.con, sql)
        if encoded:
            for name in ids:
                if name in got:
                    got[name] = _ids.decode(got[name])
        return got

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
        return _colcache.file_rows(self, self.column_cache, cols, not_null, limit)

    def load_columns(self, names: Sequence[str]
                     ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """Whole columns of the private table, decoded by DuckDB in one scan, in the
        table's order: ``name -> (values, NULL mask or None)`` (values at NULL rows are
        arbitrary; NaN is a value).  For columns of
        :data:`~dpfast.session._fetch.NUMPY_TYPES`: the dtypes and values ``fetchnumpy``
        gives the row queries."""
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
