"""The gated benchmarks: each pairs a dpfast call with the baseline a user would otherwise
run, on the same input (numpy's insecure float noise, OpenSSL's ChaCha20 through
``cryptography``, numpy's PCG64, dp_accounting, a bare SQLite transaction).

Sizes: the full run uses the README's sizes (10^7 cells); ``quick`` uses smaller inputs so
the whole gate finishes in well under a minute on a 2-core machine.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable

import numpy as np

from dpfast.perf import suite_tables as _st
from dpfast.perf.runner import Entry
from dpfast.perf.suite_session import session_sql, session_sql_parquet
from dpfast.perf.suite_tables import CENSUS_SHAPE, census_tree  # noqa: F401 (public here)

KEY = bytes(range(32))


def _nothing() -> None:
    return None


def _chacha20_blocks(quick: bool):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    from dpfast import _native

    nbytes = (4 if quick else 16) << 20
    src, dst = bytes(nbytes), bytearray(nbytes)
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = np.array([3, 0, 0], np.uint32)
    out = np.empty(nbytes // 4, np.uint32)

    def base() -> None:
        Cipher(algorithms.ChaCha20(KEY, bytes(16)), mode=None).encryptor().update_into(src, dst)

    return base, lambda: _native.chacha20_blocks(key_words, nonce, 0, nbytes // 64, out), \
        _nothing


def _keystream(quick: bool):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    import dpfast

    nbytes = (4 if quick else 16) << 20
    src = bytes(nbytes)

    def base() -> None:
        Cipher(algorithms.ChaCha20(KEY, bytes(16)), mode=None).encryptor().update(src)

    return base, lambda: dpfast.keystream(KEY, 3, nbytes), _nothing


def kernel_refills(nwords: int) -> Callable[[], None]:
    """A call that runs what the samplers run for ``nwords`` words: a numba kernel
    refilling a 16 KiB buffer (the samplers' ``REFILL_WORDS``) from its stream (C ChaCha20
    through ``st[ST_FILL]``, ``KEY``, nonce 3) and reading it, from block 0 each call.
    Shared by the ``kernel_refill`` entry and the keystream and sampler benches."""
    from dpfast import _native
    from dpfast._kernels import chacha as ck
    from dpfast.noise import _chunks

    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = np.array([3, 0, 0], np.uint32)
    buf = np.empty(_chunks.REFILL_WORDS, np.uint64)
    st = np.zeros(ck.ST_COLS, np.int64)
    st[ck.ST_FILL] = _native.blocks_address()

    def run() -> None:
        st[ck.ST_BLOCK], nonce[2] = 0, 0
        ck.refills(buf, st, key_words, nonce, nwords)

    return run


def _kernel_refill(quick: bool):
    """The kernels' buffer refills (:func:`kernel_refills`) vs OpenSSL on the same number
    of bytes."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    nbytes = (4 if quick else 16) << 20
    src, dst = bytes(nbytes), bytearray(nbytes)
    cand = kernel_refills(nbytes // 8)

    def base() -> None:
        Cipher(algorithms.ChaCha20(KEY, bytes(16)), mode=None).encryptor().update_into(src, dst)

    return base, cand, _nothing


def _on_one_thread(fn: Callable[[], object]) -> Callable[[], None]:
    """``fn`` with numba limited to one thread for the call."""
    def run() -> None:
        import numba

        old = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            fn()
        finally:
            numba.set_num_threads(old)

    return run


def _one_core(setup: Callable[[bool], tuple]) -> Callable[[bool], tuple]:
    """The same pair with numba limited to one thread (the one-core targets)."""
    def wrapped(quick: bool):
        base, cand, teardown = setup(quick)
        return base, _on_one_thread(cand), teardown

    return wrapped


def _scaling(setup: Callable[[bool], tuple]) -> Callable[[bool], tuple]:
    """Thread scaling: the dpfast call on all of numba's threads against the same call
    on one thread, timed back to back (the ratio is the speed-up of the extra cores)."""
    def wrapped(quick: bool):
        _, cand, teardown = setup(quick)
        return _on_one_thread(cand), cand, teardown

    return wrapped


def _random_raw(quick: bool):
    import dpfast

    n = (1 if quick else 2) << 20
    pcg, gen = np.random.PCG64(1), dpfast.default_rng(KEY)
    return lambda: pcg.random_raw(n), lambda: gen.random_raw(n), _nothing


def _cells(quick: bool) -> int:
    return 2_000_000 if quick else 10_000_000


def _noise(name: str, scale: float, dtype: type) -> Callable[[bool], tuple]:
    def setup(quick: bool):
        import dpfast

        n = _cells(quick)
        gen, npr = dpfast.default_rng(KEY), np.random.default_rng(1)
        x: np.ndarray = np.zeros(n, dtype)
        fn = getattr(dpfast, name)
        if dtype is np.int64:  # in place, as a histogram is noised
            def cand() -> None:
                fn(x, scale, rng=gen, out=x)
        else:
            def cand() -> None:
                fn(x, scale, rng=gen)
        return lambda: npr.laplace(0.0, scale, size=n), cand, _nothing

    return setup


def _out_vs_in_place(name: str, scale: float, dtype: type) -> Callable[[bool], tuple]:
    """A separate preallocated ``out`` against ``out=x`` (issue 40): the baseline is the
    in-place call, so ratio = in-place time / separate-out time, 1 when both paths cost
    the same.  One thread (the per-core cost is what is compared).  ``name`` is a public
    function of dpfast, or ``addressed.laplace`` / ``addressed.gaussian`` (cell-addressed,
    a fixed stream).  x holds written values (not the shared zero page a never-written
    ``np.zeros`` reads from), and ``out`` is written before the first round (its page
    faults are not timed: numpy's allocating call pays those, not a reused ``out``)."""
    def setup(quick: bool):
        import dpfast

        n = _cells(quick)
        gen = dpfast.default_rng(KEY)
        x: np.ndarray = (np.arange(n) % 64).astype(dtype)
        y: np.ndarray = x.copy()
        out: np.ndarray = np.ones(n, dtype)
        if name.startswith("addressed."):
            from dpfast.noise import addressed

            f = getattr(addressed, name.split(".", 1)[1])

            def fn(a: np.ndarray, s: float, *, rng: object, out: np.ndarray) -> object:
                return f(a, s, rng=rng, stream=7, out=out)
        else:
            fn = getattr(dpfast, name)
        return (_on_one_thread(lambda: fn(y, scale, rng=gen, out=y)),
                _on_one_thread(lambda: fn(x, scale, rng=gen, out=out)), _nothing)

    return setup


#: the ``*_out_vs_in_place`` entries: every public sampler with ``out=``, each dtype kind
#: (entry name, function, scale, dtype, dtype's name)
_OUT_CASES = (
    ("discrete_laplace_10", "discrete_laplace", 10.0, np.int64, "int64"),
    ("discrete_laplace_1000", "discrete_laplace", 1000.0, np.int64, "int64"),
    ("discrete_gaussian_10", "discrete_gaussian", 10.0, np.int64, "int64"),
    ("discrete_laplace_10_int32", "discrete_laplace", 10.0, np.int32, "int32"),
    ("discrete_gaussian_10_int32", "discrete_gaussian", 10.0, np.int32, "int32"),
    ("laplace_grid", "laplace", 10.0, np.float64, "float64"),
    ("gaussian_grid", "gaussian", 10.0, np.float64, "float64"),
    ("laplace_grid_f32", "laplace", 10.0, np.float32, "float32"),
    ("gaussian_grid_f32", "gaussian", 10.0, np.float32, "float32"),
    ("addressed_laplace", "addressed.laplace", 10.0, np.float64, "float64"),
    ("addressed_gaussian", "addressed.gaussian", 10.0, np.float64, "float64"),
)


def _gaussian_f32(quick: bool):
    """The Opacus noise path (issue 27): the secure grid Gaussian written by the kernel into
    a new float32 array (sigma 1.1, the default grid), against ``torch.normal`` into a new
    float32 tensor; both on one thread (``_one_core`` limits numba, this torch)."""
    import torch

    import dpfast

    n = _cells(quick)
    gen = dpfast.default_rng(KEY)
    x = np.zeros(n, np.float32)

    def base() -> None:
        old = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            torch.normal(0.0, 1.1, size=(n,), dtype=torch.float32)
        finally:
            torch.set_num_threads(old)

    def cand() -> None:
        dpfast.gaussian(x, 1.1, rng=gen)

    return base, cand, _nothing


def _exponential(quick: bool):
    import dpfast

    n = 10**6
    u = np.random.default_rng(0).normal(scale=3.0, size=n)
    gen, npr = dpfast.default_rng(KEY), np.random.default_rng(1)
    return (lambda: np.argmax(u + npr.gumbel(scale=2.0, size=n)),
            lambda: dpfast.exponential(u, 1.0, rng=gen), _nothing)


def _dpsgd_epsilon(quick: bool):
    import dp_accounting as dpa

    from dpfast.accounting import dpsgd_epsilon

    q, sigma, steps, delta = 0.01, 1.1, 10_000, 1e-5

    def base() -> None:
        acct = dpa.rdp.RdpAccountant()
        acct.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
        acct.get_epsilon(delta)

    return base, lambda: dpsgd_epsilon(q, sigma, steps, delta), _nothing


def _budget_spend(quick: bool):
    import dpfast
    from dpfast.accounting import events

    n = 40 if quick else 200
    tmp = tempfile.mkdtemp(prefix="dpfast-bench-")
    con = sqlite3.connect(os.path.join(tmp, "raw.sqlite"), isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = FULL")
    con.execute("CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL, "
                "analyst TEXT, note TEXT, event TEXT, rdp TEXT)")
    budget = dpfast.Budget(1e9, 1e-6, ledger=os.path.join(tmp, "ledger.sqlite"))
    event = events.Gaussian(100.0)

    def base() -> None:
        for _ in range(n):
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT INTO charges (time, analyst, note, event, rdp) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (time.time(), "a", "n", '{"type":"Gaussian"}', "[0.1]"))
            con.execute("COMMIT")

    def cand() -> None:
        for _ in range(n):
            budget.spend(event, note="n", analyst="a")

    def teardown() -> None:
        con.close()
        budget.close()
        shutil.rmtree(tmp, ignore_errors=True)

    return base, cand, teardown


def _topdown(quick: bool):
    import dpfast
    from dpfast import tables

    pop, levels = census_tree(1_000_000 if quick else CENSUS_SHAPE[-1])
    gen, npr = dpfast.default_rng(KEY), np.random.default_rng(1)

    def base() -> None:  # insecure: aggregate every level, numpy Laplace on every unit
        for ids in levels:
            t = np.bincount(ids, weights=pop)
            t + npr.laplace(0.0, 5.0, t.shape[0])

    return base, lambda: tables.topdown(pop, levels, rho=1.0, rng=gen), _nothing


def _dask_rows(part: int, per: int, people: int):
    """One partition of the ``dask_count`` rows (generated where it is computed)."""
    import pandas as pd

    g = np.random.default_rng(part)
    return pd.DataFrame({"key": (g.zipf(1.3, per) - 1) % 100_000,
                         "id": g.integers(0, people, per)})


def _dask_count(quick: bool):
    """``dpfast.dask.count`` on a 2-worker ``LocalCluster`` (one core, one numba thread
    per worker; the rows generated and persisted on the workers) vs ``tables.count`` in
    this process on the same rows (2*10^6 quick, 10^7 full; 10^5 Zipf keys, 10 rows per
    person, k = 3, private key selection).  The baseline is the single process: ratio =
    single / cluster (issue 28: >= 0.7 at 10^7)."""
    import dask.dataframe as dd
    import distributed

    import dpfast
    import dpfast.dask as dkd
    from dpfast import tables

    rows, nparts = (2_000_000, 4) if quick else (10_000_000, 8)
    per, people = rows // nparts, rows // 10
    local = [_dask_rows(p, per, people) for p in range(nparts)]
    keys = np.concatenate([f["key"].to_numpy() for f in local])
    ids = np.concatenate([f["id"].to_numpy() for f in local])
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0",
                                       env={"NUMBA_NUM_THREADS": "1"})
    client = distributed.Client(cluster)
    try:
        ddf = client.persist(dd.from_map(_dask_rows, range(nparts), per=per, people=people,
                                         meta=local[0].iloc[:0]))
        distributed.wait(ddf)
    except BaseException:
        client.close()
        cluster.close()
        raise
    kw = dict(epsilon=1.0, delta=1e-6, max_partitions=3)

    def base() -> None:
        tables.count(keys, ids, rng=dpfast.default_rng(KEY), **kw)

    def cand() -> None:
        dkd.count(ddf, "key", "id", rng=dpfast.default_rng(KEY), **kw)

    def teardown() -> None:
        client.close()
        cluster.close()

    return base, cand, teardown


#: rounds of the thread-scaling entries: each is cheap (two calls of 2*10^6 cells), and
#: a median over 11 back-to-back pairs rides out a burst of load that 5 do not
SCALING_ROUNDS = 11


def _threads(name: str, what: str, setup: Callable[[bool], tuple]) -> Entry:
    """A thread-scaling entry: the call on all threads vs the same call on one."""
    return Entry(f"{name}_threads", f"{what}, all threads", "the same call on one thread",
                 _scaling(setup), min_rounds=SCALING_ROUNDS)


#: the samplers timed on all threads vs one (``*_threads``) and on one thread vs numpy
#: (``*_1core``): (entry name, what, dpfast function, scale, dtype; int64 in place)
_SAMPLERS = (
    ("discrete_laplace_10", "discrete_laplace scale 10, in place", "discrete_laplace", 10.0,
     np.int64),
    ("discrete_laplace_1000", "discrete_laplace scale 1000, in place", "discrete_laplace",
     1000.0, np.int64),
    ("discrete_gaussian_10", "discrete_gaussian sigma 10, in place", "discrete_gaussian", 10.0,
     np.int64),
    ("laplace_grid", "laplace (2^k grid) scale 10", "laplace", 10.0, np.float64),
    ("gaussian_grid", "gaussian (2^k grid) sigma 10", "gaussian", 10.0, np.float64),
)


ENTRIES: list[Entry] = [
    Entry("chacha20_blocks", "C ChaCha20 blocks into a buffer",
          "cryptography ChaCha20 update_into (OpenSSL)", _chacha20_blocks),
    Entry("keystream", "dpfast.keystream (new bytes)",
          "cryptography ChaCha20 update (new bytes)", _keystream),
    Entry("kernel_refill", "kernels' keystream refills (16 KiB buffer, one core)",
          "cryptography ChaCha20 update_into (OpenSSL)", _kernel_refill),
    Entry("random_raw", "Generator.random_raw", "numpy PCG64.random_raw", _random_raw),
    # thread scaling (all threads vs one); the all-thread speed against numpy is this
    # ratio times the one-thread figure below
    *(_threads(name, what, _noise(fn, scale, dtype)) for name, what, fn, scale, dtype in _SAMPLERS),
    *(Entry(f"{name}_1core", f"{what}, one thread", "numpy Generator.laplace",
            _one_core(_noise(fn, scale, dtype))) for name, what, fn, scale, dtype in _SAMPLERS),
    # out= into a separate preallocated array vs in place (ratio >= ~1: no second pass)
    *(Entry(f"{name}_out_vs_in_place", f"{fn} scale {scale:g} into a separate out, {dt}, "
            "one thread", "the same call in place (out=x)", _out_vs_in_place(fn, scale, t))
      for name, fn, scale, t, dt in _OUT_CASES),
    Entry("gaussian_f32_1core", "gaussian (2^k grid) sigma 1.1 into float32, one thread "
          "(the Opacus noise path)", "torch.normal float32, one thread",
          _one_core(_gaussian_f32), needs=("torch",)),
    Entry("exponential_1e6", "exponential, 10^6 candidates",
          "numpy argmax(u + Generator.gumbel)", _exponential),
    Entry("dpsgd_epsilon", "dpsgd_epsilon (RDP, 10^4 steps)", "dp_accounting RdpAccountant",
          _dpsgd_epsilon, needs=("dp_accounting",)),
    Entry("budget_spend", "Budget.spend on a file ledger",
          "bare durable SQLite transaction", _budget_spend),
    Entry("topdown_census", "tables.topdown, census-shaped tree (10^6 blocks quick)",
          "np.bincount per level + numpy Laplace (no post-processing)", _topdown),
    Entry("dask_count", "dask.count, 2-worker LocalCluster (2*10^6 rows quick)",
          "tables.count in one process, same rows", _dask_count,
          needs=("distributed", "dask.dataframe", "pandas"), min_rounds=7),
    Entry("session_sql", "Session.sql GROUP BY count, DuckDB file + ledger (2*10^6 rows "
          "quick)", "tables.count on the same arrays", session_sql,
          needs=("duckdb", "sqlglot"), min_rounds=7),
    Entry("session_sql_parquet", "Session.sql GROUP BY count, Parquet file + ledger "
          "(2*10^6 rows quick)", "tables.count on the same arrays", session_sql_parquet,
          needs=("duckdb", "sqlglot"), min_rounds=7),
    *_st.ENTRIES,  # the release layer (issue 28): against pandas, linear in the rows
]
