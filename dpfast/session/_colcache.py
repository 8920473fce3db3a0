"""The column cache of a file source (Parquet files, a DuckDB database file).

A session over a file asks DuckDB for the same columns query after query, and DuckDB
decodes them every time (a Parquet file is decompressed and decoded on each scan; a DuckDB
table is copied out of its blocks).  :class:`ColumnCache` keeps the decoded columns in
memory instead: per column, the numpy values exactly as DuckDB's ``fetchnumpy`` gives
them and the NULL mask (None: no NULL).  NaN is a value in Parquet and DuckDB, not NULL,
so it is kept as a value; only the mask says NULL.

* **Key and validity.**  Entries are keyed by column name and belong to one *stamp* of
  the source's files (each file's absolute path, size, modification and status-change
  times in nanoseconds, inode and device, and a digest of the footer or headers the
  format rewrites on every write; and a DuckDB file's WAL,
  :meth:`dpfast.session._source.Source.stamps`: the same stamps as the source's
  fingerprint, so a rewrite that restores size and mtime still drops the columns).
  Every use passes the current stamp; a different one drops every entry.  Columns loaded
  while the files changed (the stamp taken after the load differs from the one before)
  are used for that query only, never stored.
* **Bound.**  At most ``budget`` bytes of values and masks (strings: the pointers plus an
  estimate of the string objects); least recently used columns are evicted first; a
  column larger than the whole budget is not kept.  ``budget=0`` disables the cache.
* **What it changes.**  Nothing in a release: the rows a query reads are the cached
  columns' rows whose NOT NULL columns hold a value, in the table's order -- the arrays
  DuckDB's ``SELECT ... WHERE col IS NOT NULL`` returns (``tests/test_session_colcache.py``
  checks releases bit for bit with the cache on and off).  It is not part of the privacy
  accounting (the budget, the ledger and the result cache do not see it).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ._fetch import NUMPY_TYPES
from ._stamps import Stamp

if TYPE_CHECKING:
    from ._source import Source

__all__ = ["ColumnCache", "DEFAULT_BUDGET", "check_budget", "file_rows"]

#: the default byte budget of a session's column cache (1 GiB)
DEFAULT_BUDGET = 1 << 30

Column = tuple[np.ndarray, "np.ndarray | None"]


def check_budget(budget: object) -> int:
    """``budget`` as a byte count (an int >= 0), else TypeError / ValueError naming
    ``column_cache``."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise TypeError(f"column_cache must be a byte count (int >= 0; 0 disables it), got "
                        f"{budget!r}")
    if budget < 0:
        raise ValueError(f"column_cache must be >= 0 bytes (0 disables it), got {budget}")
    return int(budget)


def nbytes(col: Column) -> int:
    """The memory a cached column holds: values and mask; for an object (string) column
    also the objects, estimated from up to 1000 evenly spaced ones."""
    values, null = col
    n = values.nbytes + (0 if null is None else null.nbytes)
    if values.dtype.kind == "O" and len(values):
        step = max(1, len(values) // 1000)
        sample = values[::step]
        n += int(sum(sys.getsizeof(x) for x in sample) / len(sample) * len(values))
    return n


class ColumnCache:
    """Decoded columns of one file source under a byte budget (see the module
    docstring)."""

    def __init__(self, budget: int) -> None:
        self.budget = check_budget(budget)
        self._entries: OrderedDict[str, tuple[Column, int]] = OrderedDict()
        self._bytes = 0
        self._stamp: list[Stamp] | None = None
        self._lock = threading.Lock()
        self.hits = self.loads = self.evictions = 0

    def info(self) -> dict[str, int | list[str]]:
        """What the cache holds: ``columns`` (names, least recently used first),
        ``bytes``, ``budget``, and the counters ``hits``, ``loads`` (columns decoded),
        ``evictions``."""
        with self._lock:
            return {"columns": list(self._entries), "bytes": self._bytes,
                    "budget": self.budget, "hits": self.hits, "loads": self.loads,
                    "evictions": self.evictions}

    def clear(self) -> None:
        """Drop every column."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        self._entries.clear()
        self._bytes = 0

    def get(self, stamp: list[Stamp], names: Sequence[str],
            load: Callable[[list[str]], dict[str, Column]] | None,
            restamp: Callable[[], list[Stamp]]) -> dict[str, Column] | None:
        """The columns ``names`` of the files as stamped ``stamp``: the cached ones, and
        ``load(missing)`` for the others (stored unless ``restamp()`` after the load
        differs from ``stamp``, or the budget cannot hold them); None when a column is
        missing and ``load`` is None."""
        names = list(dict.fromkeys(names))
        with self._lock:
            if stamp != self._stamp:
                self._drop()
                self._stamp = stamp
            have: dict[str, Column] = {}
            for n in names:
                hit = self._entries.get(n)
                if hit is not None:
                    self._entries.move_to_end(n)
                    have[n] = hit[0]
            missing = [n for n in names if n not in have]
            if not missing:
                self.hits += 1
                return have
        if load is None:
            return None
        # kept writable: dpfast.tables never writes to its inputs, and numba's read-only
        # array kernels measured 5-8% slower (a mean at 10^7 rows)
        got = load(missing)
        same = restamp() == stamp
        with self._lock:
            self.loads += len(got)
            if same and stamp == self._stamp:
                for n, col in got.items():
                    self._put(n, col)
        have.update(got)
        return have

    def _put(self, name: str, col: Column) -> None:
        size = nbytes(col)
        old = self._entries.pop(name, None)
        if old is not None:
            self._bytes -= old[1]
        if size > self.budget:
            return
        self._entries[name] = (col, size)
        self._bytes += size
        while self._bytes > self.budget:
            _, (_, s) = self._entries.popitem(last=False)
            self._bytes -= s
            self.evictions += 1


def resolve(schema: dict[str, str], name: str) -> str | None:
    """The source column SQL's ``name`` names (SQL folds case): the exact name, else the
    one column equal to it case-insensitively; None if there is none or several."""
    if name in schema:
        return name
    hits = [c for c in schema if c.lower() == name.lower()]
    return hits[0] if len(hits) == 1 else None


def file_rows(src: Source, cache: ColumnCache, cols: dict[str, str], not_null: Sequence[str],
              limit: int | None = None
              ) -> dict[str, np.ndarray] | None:
    """A file source's columns ``cols`` (output name -> column) of the rows whose
    ``not_null`` columns hold a value, from ``cache`` (decoding the missing columns
    through ``src.load_columns``): the arrays DuckDB gives for ``SELECT col AS name ...
    WHERE col IS NOT NULL ...`` in the table's order.  ``limit=0``: no rows, only the
    columns' types, and only from columns already cached (a cache hit of the result cache
    must read no rows).  None (then DuckDB answers) unless every column is in ``not_null``
    and has one of :data:`~dpfast.session._fetch.NUMPY_TYPES` (those DuckDB's
    ``fetchnumpy`` returns as the row query does), or for another ``limit``."""
    if limit not in (None, 0) or not set(cols.values()) <= set(not_null):
        return None
    stamp = src.stamps()
    schema = src.schema(stamp)
    names: dict[str, str] = {}
    for c in dict.fromkeys(not_null):
        real = resolve(schema, c)
        if real is None or schema[real] not in NUMPY_TYPES:
            return None
        names[c] = real
    got = cache.get(stamp, list(dict.fromkeys(names.values())),
                    None if limit == 0 else src.load_columns, src.stamps)
    if got is None:
        return None
    if limit == 0:
        return {out: got[names[c]][0][:0] for out, c in cols.items()}
    keep = None
    for real in dict.fromkeys(names.values()):
        null = got[real][1]
        if null is not None:
            keep = ~null if keep is None else keep & ~null
    return {out: got[names[c]][0] if keep is None else got[names[c]][0][keep]
            for out, c in cols.items()}
