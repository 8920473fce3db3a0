"""``dpfast warmup``: compile dpfast's kernels ahead of time, into numba's on-disk cache.

numba compiles each kernel the first time it runs and caches the machine code on disk
(``__pycache__`` next to the package, or ``NUMBA_CACHE_DIR``); a first call after
installation pays that compilation.  ``dpfast warmup`` runs each family of releases once
on a tiny input (samplers, every registered statistic of :mod:`dpfast.tables` -- one step
``tables.<name>`` each, from :data:`dpfast.tables.statistics.REGISTRY`: integer and float
values, public keys and private key selection --, the many-metric releases,
TopDown, histograms, local DP, selection), the tables and TopDown once on inputs large
enough for their parallel kernels, the inputs ``dpfast bench --quick`` times, and the demo
(with the demo extra), so that later processes load every kernel from the cache -- e.g. as
a step of a container build::

    RUN pip install dpfast && dpfast warmup

It prints a line per family on stderr (and, while a family compiles for more than a few
seconds, a progress line every few seconds) and draws noise only from a fixed
public key (nothing it computes is released).  Exit code 0 when every family compiled.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable

HELP = "compile every kernel ahead (e.g. in a container build), with a progress line"

_KEY = bytes(32)  # public: warm-up results are thrown away


def _samplers() -> None:
    import numpy as np

    import dpfast

    x = np.zeros(8, np.int64)
    dpfast.discrete_laplace(x, 2.0, rng=_KEY)
    dpfast.discrete_gaussian(x, 2.0, rng=_KEY)
    big = np.zeros(1 << 16, np.int64)  # a separate out: x's range from the int64 kernel
    dpfast.discrete_laplace(big, 2.0, rng=_KEY, out=np.empty_like(big))
    dpfast.laplace(np.zeros(8), 2.0, rng=_KEY)
    dpfast.gaussian(np.zeros(8), 2.0, rng=_KEY)
    from dpfast._kernels import pages  # a large new output's first touch, on threads

    pages.touch_pages(np.zeros(2 * pages.PAGE, np.uint8), 1)


def _statistic(name: str) -> None:
    """The registered statistic ``name`` (``dpfast.tables.<name>``) once per value kind
    (integers and floats for a bounded one), over public keys and with private key
    selection (string keys), its required parameters from its ``example``."""
    import numpy as np

    from dpfast import tables
    from dpfast.tables.statistics import REGISTRY

    stat = REGISTRY[name]
    fn = getattr(tables, name)
    keys = np.arange(60) % 3
    ids = np.arange(60)
    kinds: list[object] = [None]
    # several rows per person too (ids repeat), keeping up to two per key where the
    # statistic takes max_per_partition: the kernels' row choice is compiled here
    if stat.value:
        kinds = ([np.arange(60) % 5, np.linspace(0.0, 4.0, 60)] if stat.bounds
                 else [np.arange(60) % 7])
    kw = dict(stat.example, epsilon=1.0, rng=_KEY)
    if stat.bounds:
        kw["bounds"] = (0, 4)
    for values in kinds:
        head = [values] if stat.value else []
        fn(*head, keys, ids, domain=[0, 1, 2], **kw)
        if "delta" in stat.common:
            fn(*head, keys.astype(str), ids, delta=1e-6, **kw)
        if "max_per_partition" in stat.common:
            fn(*head, keys, ids % 17, domain=[0, 1, 2], max_per_partition=2, **kw)


def _registered() -> list[tuple[str, Callable[[], None]]]:
    """One step per registered statistic: ``("tables.<name>", ...)``."""
    from dpfast.tables.statistics import REGISTRY

    return [(f"tables.{name}", functools.partial(_statistic, name)) for name in REGISTRY]


def _aggregate() -> None:
    """``dpfast.tables.aggregate``: several statistics of one table in one release."""
    import numpy as np
    import pandas as pd

    from dpfast import tables

    df = pd.DataFrame({"k": np.arange(60) % 3, "id": np.arange(60) % 17,
                       "v": np.linspace(0.0, 4.0, 60)})
    tables.aggregate(df, "k", "id", metrics={"n": "count", "m": ("mean", "v")},
                     bounds={"v": (0.0, 4.0)}, epsilon=1.0, domain=[0, 1, 2],
                     max_per_partition=2, rng=_KEY)


def _large() -> None:
    """Inputs of ``LARGE_ROWS`` rows: the threaded kernels (smaller inputs run numpy and
    serial kernels, compiled by the steps above)."""
    import numpy as np

    from dpfast import tables
    from dpfast.cli.demo import LARGE_ROWS

    n = LARGE_ROWS
    keys = np.arange(n) % 3
    ids = np.arange(n) // 2
    tables.count(keys, ids, epsilon=1.0, domain=[0, 1, 2], rng=_KEY)
    tables.count(keys, epsilon=1.0, domain=[0, 1, 2], rng=_KEY)
    for values in (np.arange(n) % 5, np.linspace(0.0, 4.0, n)):
        tables.mean(values, keys, ids, bounds=(0, 4), epsilon=1.0, domain=[0, 1, 2],
                    rng=_KEY)
    m = 2 * n  # a level of n units above the leaves: the fused downward pass
    for mix in (1, 7919):  # leaves = units, parents in order; both permuted (order, groups)
        leaf = (np.arange(m) * mix) % m
        mid = ((leaf // 2) * mix) % n
        levels = [np.zeros(m, np.int64), mid // 256, mid, leaf]
        tables.topdown(np.ones(m, np.int64), levels, rho=[0.1] * 4, rng=_KEY)


def _topdown() -> None:
    import numpy as np

    from dpfast import tables

    levels = [np.zeros(4, np.int64), np.array([0, 0, 1, 1]), np.arange(4)]
    tables.topdown(np.array([3, 1, 4, 1]), levels, rho=[0.1, 0.1, 0.1], rng=_KEY)


def _histogram() -> None:
    import numpy as np

    import dpfast

    x = np.linspace(0.0, 1.0, 50)
    dpfast.histogram(x, bins=5, range=(0, 1), epsilon=1.0, rng=_KEY)
    dpfast.histogram2d(x, x, bins=3, range=[(0, 1), (0, 1)], epsilon=1.0, rng=_KEY)


def _local() -> None:
    import numpy as np

    from dpfast import local

    local.randomized_response(np.zeros(64, bool), 1.0, rng=_KEY)
    local.k_randomized_response(np.arange(64) % 4, 4, 1.0, rng=_KEY)


def _selection() -> None:
    import numpy as np

    from dpfast import selection

    u = np.arange(10.0)
    selection.exponential(u, 1.0, rng=_KEY)
    selection.permute_and_flip(u, 1.0, rng=_KEY)
    selection.top_k(u, 3, 1.0, rng=_KEY)


def _demo() -> None:
    """``dpfast demo`` at a size whose tables reach the parallel kernels (>= 32,768 rows),
    output discarded: a Session over DuckDB hands the kernels read-only arrays, which numba
    compiles apart.  Skipped without the demo extra (DuckDB, sqlglot)."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("duckdb", "sqlglot")):
        print("dpfast warmup: demo skipped (needs DuckDB and sqlglot: "
              "pip install 'dpfast[demo]')", file=sys.stderr, flush=True)
        return
    from dpfast.cli import demo

    demo.demo(cells=100_000, people=20_000, out=lambda line: None)


def _bench() -> None:
    """What ``dpfast bench --quick`` times, dpfast's side of each entry run once (its
    inputs, sizes and dtypes: the samplers over several chunks, float32, the thread
    layouts, TopDown, Dask and the Session), so that the gate compiles nothing; entries
    whose optional modules are missing are skipped, as the gate skips them."""
    import importlib

    from dpfast.perf import ENTRIES

    for entry in ENTRIES:
        try:
            for mod in entry.needs:
                importlib.import_module(mod)
        except ImportError:
            continue
        _base, cand, teardown = entry.setup(True)
        try:
            cand()
        finally:
            teardown()


#: the families besides the samplers and the registered statistics, in order
_FAMILIES: list[tuple[str, Callable[[], None]]] = [
    ("tables.aggregate", _aggregate),
    ("topdown", _topdown),
    ("large", _large),
    ("histogram", _histogram),
    ("local", _local),
    ("selection", _selection),
    ("demo", _demo),
    ("bench", _bench),
]


def steps() -> list[tuple[str, Callable[[], None]]]:
    """(family, what it runs) in order, each compiling what its releases need: the
    samplers, one step per registered statistic (``tables.<name>``, the registry as it is
    now), then the other families (one whose name a statistic's step took is that step)."""
    head = [("samplers", _samplers), *_registered()]
    taken = {name for name, _ in head}
    return head + [step for step in _FAMILIES if step[0] not in taken]


#: the steps at import (:func:`steps` reads the registry again when the command runs)
STEPS: list[tuple[str, Callable[[], None]]] = steps()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", metavar="NAMES", default=None,
                        help="comma-separated families (default: all): "
                             + ", ".join(name for name, _ in steps()))


def run(args: argparse.Namespace) -> int:
    from dpfast.cli import CliError

    every = steps()
    todo = every
    if args.only:
        wanted = [s.strip() for s in args.only.split(",") if s.strip()]
        known = {name for name, _ in every}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise CliError(f"--only: unknown famil{'ies' if len(unknown) > 1 else 'y'} "
                           f"{', '.join(unknown)} (known: {', '.join(n for n, _ in every)})")
        todo = [(n, f) for n, f in every if n in wanted]
    from dpfast import _parallel

    _parallel.install_compile_notice()
    _parallel.skip_notice()  # the family lines say it; the progress lines still come
    t0 = time.perf_counter()
    for i, (name, fn) in enumerate(todo, 1):
        t = time.perf_counter()
        print(f"dpfast warmup: [{i}/{len(todo)}] {name} ...", file=sys.stderr, flush=True)
        fn()
        print(f"dpfast warmup: [{i}/{len(todo)}] {name} done, {time.perf_counter() - t:.1f} s",
              file=sys.stderr, flush=True)
    print(f"dpfast warmup: {len(todo)} kernel families compiled and cached in "
          f"{time.perf_counter() - t0:.1f} s")
    return 0
