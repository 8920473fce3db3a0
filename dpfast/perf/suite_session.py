"""The gated benchmarks of :meth:`dpfast.Session.sql` (issue 24): a private ``GROUP BY``
count in SQL over a DuckDB database file (``session_sql``) or a Parquet file
(``session_sql_parquet``), charged to a ledger file, against :func:`dpfast.tables.count`
on the same rows already in numpy arrays (no ledger).  The runner's warm-up call decodes
the file's columns into the session's column cache; the timed calls read them there."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile

import numpy as np

KEY = bytes(range(32))


def session_sql(quick: bool):
    """``session.sql("SELECT k, COUNT(*) ... GROUP BY k")`` from a DuckDB file (2*10^6 rows
    quick, 10^7 full; 10^5 Zipf keys, 10 rows per person, k = 3, private key selection,
    a ledger file) vs ``tables.count`` on the same arrays.  Every call of either side gets
    a new epsilon (the SQL call is then a cache miss, and both compute the selection
    threshold of new parameters).  Ratio = direct / SQL (issue 24: >= 1 / 1.2)."""
    return _session_sql(quick, "duckdb")


def session_sql_parquet(quick: bool):
    """:func:`session_sql` from a Parquet file of the same rows."""
    return _session_sql(quick, "parquet")


def _session_sql(quick: bool, store: str):
    import duckdb

    import dpfast
    from dpfast import tables

    rows = 2_000_000 if quick else 10_000_000
    g = np.random.default_rng(0)
    keys = ((g.zipf(1.3, rows) - 1) % 100_000).astype(np.int64)
    ids = g.integers(0, rows // 10, rows).astype(np.int64)
    tmp = tempfile.mkdtemp(prefix="dpfast-bench-session-")
    try:
        path = os.path.join(tmp, "store.duckdb")
        con = duckdb.connect(path)
        con.register("src", {"k": keys, "person": ids})
        con.execute("CREATE TABLE events AS SELECT * FROM src")
        pq = os.path.join(tmp, "events.parquet")
        if store == "parquet":
            con.execute(f"COPY events TO '{pq}' (FORMAT parquet)")
        con.close()
        if store == "parquet":
            os.remove(path)
            path = pq
        session = dpfast.Session(path, privacy_unit="person", epsilon=10 ** 6, delta=0.5,
                                 ledger=os.path.join(tmp, "ledger.db"), max_partitions=3,
                                 rng=dpfast.default_rng(KEY))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    q = "SELECT k, COUNT(*) AS n FROM events GROUP BY k"
    eps_sql = (1.0 + i * 1e-9 for i in itertools.count())
    eps_direct = (1.0 + i * 1e-9 for i in itertools.count())
    gen = dpfast.default_rng(KEY)

    def base() -> None:
        tables.count(keys, ids, epsilon=next(eps_direct), delta=1e-6, max_partitions=3,
                     rng=gen)

    def cand() -> None:
        session.sql(q, epsilon=next(eps_sql), delta=1e-6)

    def teardown() -> None:
        session.close()
        shutil.rmtree(tmp, ignore_errors=True)

    return base, cand, teardown
