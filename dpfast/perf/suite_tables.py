"""The gated release-layer benchmarks (issue 28): ``tables.count`` / ``tables.mean`` against
the insecure pandas pipelines doing the same steps, and the scaling of count, mean,
TopDown and ``dask.count`` in the number of rows.

Scaling entries time ten calls on ``n / 10`` rows (the baseline; each call its own rows)
against one call on ``n`` rows: ``ratio = ns per row at n / 10 over ns per row at n``,
so 1.0 is linear, above 1 better than linear (fixed costs amortised), below 1 worse
(a cache or memory effect that grows with the data).  Quick: n = 4*10^6 rows or TopDown
blocks (its arrays are past glibc's 32 MiB mmap threshold, where every fresh array costs
a page-zeroing pass: the regime of 10^7 rows), dask 2*10^6 rows; full: 10^7.  The pandas
entries: 10^6 rows quick, 10^7 full.

The rows: 10 rows per person, Zipf(1.3) keys modulo 10^5, ``max_partitions=3``,
epsilon 1, delta 1e-6, private key selection; the mean's values integers in [0, 99].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpfast.perf.runner import Entry

CENSUS_SHAPE = (1, 51, 3_143, 84_414, 8_132_968)


def census_tree(n_blocks: int = CENSUS_SHAPE[-1], seed: int = 0
                ) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(leaf_counts, levels)``: a census-shaped tree (nation, states, counties, tracts,
    blocks) with ``n_blocks`` leaves, the other levels scaled with it; every unit has a
    child; block populations like census blocks (about a third empty, mean about 40)."""
    g = np.random.default_rng(seed)
    scale = n_blocks / CENSUS_SHAPE[-1]
    sizes = [1, 51] + [max(51, int(round(s * scale))) for s in CENSUS_SHAPE[2:4]] + [n_blocks]
    sizes[3] = max(sizes[3], sizes[2])
    parents = []
    for j in range(1, len(sizes)):
        n_par, n = sizes[j - 1], sizes[j]
        p = np.concatenate([np.arange(n_par), g.integers(0, n_par, n - n_par)])
        p.sort()
        parents.append(p)
    levels = [np.arange(n_blocks, dtype=np.int64)]
    for p in reversed(parents):
        levels.insert(0, p[levels[0]])
    pop = np.where(g.random(n_blocks) < 0.35, 0,
                   np.rint(g.lognormal(3.6, 1.1, n_blocks))).astype(np.int64)
    return pop, levels

KEY = bytes(range(32))
EPS, DELTA, K = 1.0, 1e-6, 3
N_KEYS = 10 ** 5


def records(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, keys, values)``: ``rows // 10`` people, Zipf keys over 10^5 values, integer
    values in [0, 99] (the scaling and pandas benchmarks' rows)."""
    r = np.random.default_rng(seed)
    ids = r.integers(0, max(1, rows // 10), rows)
    keys = (r.zipf(1.3, rows) - 1) % N_KEYS
    return ids.astype(np.int64), keys.astype(np.int64), r.integers(0, 100, rows)


def pandas_count(ids: np.ndarray, keys: np.ndarray, npr: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The insecure count pipeline: float Laplace on PCG64, first-k keys by row order; as
    dpfast, the keys selected on a noisy unit count (eps/2; after dropping duplicate
    (id, key) rows a key's count is its number of people) and the counts noised
    separately (eps/2)."""
    import pandas as pd

    df = pd.DataFrame({"id": ids, "key": keys}).drop_duplicates()
    df = df[df.groupby("id").cumcount() < K]
    counts = df.groupby("key").size()
    n = counts.to_numpy()
    scale = K / (EPS / 2)
    sel = n + npr.laplace(0.0, scale, size=len(counts))
    keep = sel >= 1 + scale * np.log(K / (2 * DELTA))
    noisy = n[keep] + npr.laplace(0.0, scale, size=int(keep.sum()))
    return counts.index.to_numpy()[keep], noisy


def pandas_mean(ids: np.ndarray, keys: np.ndarray, values: np.ndarray,
                npr: np.random.Generator, lo: float = 0.0, hi: float = 99.0
                ) -> tuple[np.ndarray, np.ndarray]:
    """The insecure mean pipeline (one row per person and key, at most ``K`` keys per
    person, first ones by row order): clamp, per key the sum and the count, numpy Laplace
    on both, the keys selected on the noisy count (one row per person and key: the count is
    the number of people), the noisy sum over the noisy count."""
    import pandas as pd

    df = pd.DataFrame({"id": ids, "key": keys, "v": values})
    first = df.drop_duplicates(["id", "key"])  # the first row of each (person, key)
    first = first[first.groupby("id").cumcount() < K]
    g = first.assign(v=first["v"].clip(lo, hi)).groupby("key")
    counts, sums = g.size(), g["v"].sum()
    n = counts.to_numpy() + npr.laplace(0.0, K / (EPS / 3), len(counts))
    s = sums.to_numpy() + npr.laplace(0.0, K * (hi - lo) / (EPS / 3), len(counts))
    p = counts.to_numpy() + npr.laplace(0.0, K / (EPS / 3), len(counts))
    keep = p >= 1 + (K / (EPS / 3)) * np.log(K / (2 * DELTA))
    mean = np.clip(s / np.maximum(n, 1), lo, hi)
    return counts.index.to_numpy()[keep], mean[keep]


def _rows(quick: bool) -> int:
    return 1_000_000 if quick else 10_000_000


def _scale_rows(quick: bool) -> int:
    return 4_000_000 if quick else 10_000_000


def _nothing() -> None:
    return None


def count_call(ids: np.ndarray, keys: np.ndarray) -> Callable[[], object]:
    import dpfast
    from dpfast import tables

    def call() -> object:
        return tables.count(keys, ids, epsilon=EPS, delta=DELTA, max_partitions=K,
                            rng=dpfast.default_rng(KEY), selection="laplace")

    return call


def mean_call(ids: np.ndarray, keys: np.ndarray, values: np.ndarray) -> Callable[[], object]:
    import dpfast
    from dpfast import tables

    def call() -> object:
        return tables.mean(values, keys, ids, bounds=(0, 99), epsilon=EPS, delta=DELTA,
                           max_partitions=K, rng=dpfast.default_rng(KEY))

    return call


def _count_vs_pandas(quick: bool):
    ids, keys, _ = records(_rows(quick))
    npr = np.random.default_rng(1)
    return lambda: pandas_count(ids, keys, npr), count_call(ids, keys), _nothing


def _mean_vs_pandas(quick: bool):
    ids, keys, vals = records(_rows(quick))
    npr = np.random.default_rng(1)
    return lambda: pandas_mean(ids, keys, vals, npr), mean_call(ids, keys, vals), _nothing


def _tenfold(small: list[Callable[[], object]]) -> Callable[[], None]:
    def run() -> None:
        for fn in small:
            fn()

    return run


def _scaling(make: Callable[[np.ndarray, np.ndarray, np.ndarray], Callable[[], object]]):
    def setup(quick: bool):
        n = _scale_rows(quick)
        small = [make(*records(n // 10, seed=s)) for s in range(10)]
        return _tenfold(small), make(*records(n)), _nothing

    return setup


def _topdown_scaling(quick: bool):
    import dpfast
    from dpfast import tables

    n = _scale_rows(quick)

    def make(seed: int, blocks: int) -> Callable[[], object]:
        pop, levels = census_tree(blocks, seed=seed)
        return lambda: tables.topdown(pop, levels, rho=1.0, rng=dpfast.default_rng(KEY))

    return _tenfold([make(s, n // 10) for s in range(10)]), make(0, n), _nothing


def _dask_rows(part: int, per: int, seed: int):
    """One partition of the dask scaling rows (generated on the workers)."""
    import pandas as pd

    ids, keys, _ = records(per, seed=seed * 1000 + part)
    return pd.DataFrame({"key": keys, "id": ids + part * max(1, per // 10)})  # own people


def _dask_count_scaling(quick: bool):
    """``dask.count`` on a 2-worker ``LocalCluster`` (one core and one numba thread per
    worker, rows persisted on the workers): ten releases of ``n / 10`` rows against one of
    ``n`` rows (n = 2*10^6 quick, 10^7 full; 4 and 8 partitions)."""
    import dask.dataframe as dd
    import distributed

    import dpfast
    import dpfast.dask as dkd

    n = 2_000_000 if quick else 10_000_000
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0",
                                       env={"NUMBA_NUM_THREADS": "1"})
    client = distributed.Client(cluster)

    def frame(rows: int, nparts: int, seed: int):
        meta = _dask_rows(0, 1, 0).iloc[:0]
        ddf = client.persist(dd.from_map(_dask_rows, range(nparts), per=rows // nparts,
                                         seed=seed, meta=meta))
        distributed.wait(ddf)
        return ddf

    try:
        small = [frame(n // 10, 2, s + 1) for s in range(10)]
        big = frame(n, 4 if quick else 8, 0)
    except BaseException:
        client.close()
        cluster.close()
        raise

    def release(ddf) -> Callable[[], object]:
        return lambda: dkd.count(ddf, "key", "id", epsilon=EPS, delta=DELTA,
                                 max_partitions=K, rng=dpfast.default_rng(KEY))

    def teardown() -> None:
        client.close()
        cluster.close()

    return _tenfold([release(f) for f in small]), release(big), teardown


#: the release layer's gated entries (listed by :data:`dpfast.perf.suite.ENTRIES`)
ENTRIES: list[Entry] = [
    Entry("tables_count_pandas", "tables.count, bounding + private key selection (10^6 rows "
          "quick, 10^7 full)", "the insecure pandas pipeline, same steps",
          _count_vs_pandas, needs=("pandas",)),
    Entry("tables_mean_pandas", "tables.mean, bounding + private key selection (10^6 rows "
          "quick, 10^7 full)", "the insecure pandas pipeline, same steps",
          _mean_vs_pandas, needs=("pandas",)),
    Entry("count_rows_scaling", "tables.count on n rows (4*10^6 quick, 10^7 full)",
          "ten tables.count calls on n/10 rows (ratio: ns/row at n/10 over ns/row at n)",
          _scaling(lambda ids, keys, _v: count_call(ids, keys))),
    Entry("mean_rows_scaling", "tables.mean on n rows (4*10^6 quick, 10^7 full)",
          "ten tables.mean calls on n/10 rows (ratio: ns/row at n/10 over ns/row at n)",
          _scaling(mean_call)),
    Entry("topdown_blocks_scaling", "tables.topdown, census-shaped tree of n blocks (4*10^6 "
          "quick, 10^7 full)", "ten topdown calls on n/10 blocks (ratio: ns/block at n/10 "
          "over ns/block at n)", _topdown_scaling),
    Entry("dask_count_rows_scaling", "dask.count, 2-worker LocalCluster, n rows (2*10^6 "
          "quick, 10^7 full)", "ten dask.count calls on n/10 rows (ratio: ns/row at n/10 "
          "over ns/row at n)", _dask_count_scaling,
          needs=("distributed", "dask.dataframe", "pandas")),
]
