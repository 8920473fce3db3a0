"""Noising dask arrays lazily, bit for bit as the single-machine call (see :mod:`dpfast.dask`).

``dpfast.dask.discrete_laplace(darr, scale, rng=gen)`` equals
``dpfast.discrete_laplace(darr.compute(), scale, rng=gen2)`` for any chunking, ``gen`` and
``gen2`` two generators in the same state (and the same for ``discrete_gaussian``,
``laplace``, ``gaussian``).

How: a noising call of ``n`` cells is one *segment* (the whole array, for the integer and
the float functions alike, as in :mod:`dpfast.noise`); a segment takes, from the
generator's allocator, one stream id for its exact continuation and then one per chunk
of ``CHUNK`` cells, and chunk ``j``'s cells are drawn in order from its stream.  The
driver makes exactly those allocations, so the stream of every cell is known before
anything runs: the noise is a function of (key, the call's stream ids, the cell's flat
index).  Blocks of the flat noise vector are
aligned to chunks, so each block task runs its own chunks on its own streams
(:func:`dpfast.noise._addressed.run_chunks`).  Cells the fast path leaves undecided (about one
in ``2**40``) are collected from every block and finished by one task in the order of
the single-machine driver, on the segment's continuation stream; the blocks are then
patched.  The flat noise is reshaped to the array's shape and added with the same
overflow checks as :mod:`dpfast.noise`.

Keys and fresh noise: with a :class:`dpfast.Generator` the block tasks need the
generator's key, which therefore travels inside the task graph (whoever reads the graph
can remove the noise), and the call equals the single-machine call on that generator.  A
raw 32-byte key or a :class:`dpfast.dask.WorkerKey` is never used as it is: the call draws
a fresh release id on the driver (:func:`dpfast.tables.keynoise.fresh_release_id`) and
noises with the release generator of (key, id)
(:func:`dpfast.tables.keynoise.keyed_generator`), so two calls with one key never share
noise; the graph carries the id (and, for a raw key, that release's derived key only; a
worker key is loaded by each process), so recomputing the graph -- a retried task, a
second ``compute`` -- reproduces its own noise.  ``rng=None`` noises with a fresh
urandom key per call (the process's default key never enters a graph).

Test hook: a call made under :func:`dpfast.noise._exact.force_exact` carries its forced
mode in the graph, so its block tasks are forced on any scheduler (threads, processes),
not only on the thread that built the graph.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpfast import random as _random
from dpfast._kernels import grid as _grid
from dpfast.dask.keys import WorkerKey
from dpfast.noise import _addressed, _drive, _exact, integers
from dpfast.random import _streams
from dpfast.tables import keynoise

if TYPE_CHECKING:
    import dask.array as da
    import numpy.typing as npt

    from dpfast.dask._types import WorkerSource
    from dpfast.random import RngLike

__all__ = ["discrete_laplace", "discrete_gaussian", "laplace", "gaussian"]

_BLOCK = 1 << 20  # cells per block of the flat noise (a multiple of CHUNK)


class _Words:
    """A stream source for one known stream id (allocates nothing)."""

    def __init__(self, kw: np.ndarray) -> None:
        self.key_words = kw

    def allocate(self, n: int) -> int:  # pragma: no cover - never called
        raise RuntimeError("internal: addressed streams allocate nothing")


def _key_words(src: WorkerSource) -> np.ndarray:
    """The key words of the call's generator: given, or derived by this process from a
    worker key it loads and the release id the graph carries."""
    if isinstance(src, tuple):
        wk, rid = src
        return keynoise.keyed_generator(wk.load(), rid).streams.key_words
    return src


@contextlib.contextmanager
def _forced(mode: int) -> Iterator[None]:
    """Run a task under the forced mode its graph carries (0: as the thread is)."""
    if mode and mode != _exact.forced_mode():
        with _exact.force_exact(mode):
            yield
    else:
        yield


def _segments(gen: _random.Generator, n: int, seg: int) -> list[tuple[int, int, int, int]]:
    """(start cell, end cell, continuation stream, first chunk stream) per segment, in the
    allocation order of the ordinary driver (continuation first, then the chunks)."""
    out = []
    src = gen.streams
    for a in range(0, n, seg):
        e = min(n, a + seg)
        slow = src.allocate(1)
        first = src.allocate(-(-(e - a) // _drive.CHUNK))
        out.append((a, e, slow, first))
    return out


def _block(a: int, e: int, segs: list, kind: int, t: Fraction, key_src: WorkerSource,
           force: int = 0) -> tuple:
    """Noise of flat cells [a, e) (inside one segment, a multiple of CHUNK from its start)
    and its undecided cells."""
    kw = _key_words(key_src)
    s0, s1, _, first = next(s for s in segs if s[0] <= a < s[1])
    assert e <= s1 and (a - s0) % _drive.CHUNK == 0
    j0 = (a - s0) // _drive.CHUNK
    nch = -(-(e - a) // _drive.CHUNK)
    nonces = _streams.nonce_words(first + j0, nch)
    starts = np.arange(nch, dtype=np.int64) * _drive.CHUNK
    ends = np.minimum(starts + _drive.CHUNK, e - a)
    z = np.zeros(e - a, np.int64)
    pend: list = []
    with _forced(force):
        _addressed.run_chunks(kw, nonces, starts, ends, kind, t, z, collect=pend,
                              check_main=False)
    # global (segment-relative) chunk index for the driver's ordering
    rows = [(a + c, j0 + ch, k, ints, u64s) for c, ch, k, ints, u64s in pend]
    return z, rows


def _finish(results: list, segs: list, kind: int, t: Fraction, key_src: WorkerSource,
            force: int = 0) -> dict:
    """Finish every undecided cell in the ordinary driver's order: per segment, per batch
    of chunks, per round of at most ``cap`` pending cells per chunk, chunk, cell."""
    kw = _key_words(key_src)
    rows = [r for _, rs in results for r in rs]
    if not rows:
        return {}
    smp = _addressed._Sampler(kind, t)
    cap = _drive.CHUNK if force or _exact.forced_mode() else 64
    out: dict[int, int] = {}
    for s0, s1, slow, _ in segs:
        mine = [r for r in rows if s0 <= r[0] < s1]
        if not mine:
            continue
        per_batch = _drive.REFILL_BATCH  # chunks per batch of the exact samplers' driver
        mine.sort(key=lambda r: (r[1] // per_batch, r[2] // cap, r[1], r[2]))
        ws = _streams.WordStream(_Words(kw), stream=slow)
        ex = _exact.Exact(_exact.WordSource(ws.fetch))
        for cell, _, _, ints, u64s in mine:
            out[cell] = smp.finish(ex, ints, u64s)
    return out


def _patch(res: tuple, a: int, done: dict) -> np.ndarray:
    z, rows = res
    if rows:
        z = z.copy()
        for cell, *_ in rows:
            z[cell - a] = done[cell]
    return z


def _noise(n: int, kind: int, t: Fraction, gen: _random.Generator, key_src: WorkerSource,
           seg: int) -> da.Array:
    """The flat int64 noise vector of a call (a lazy dask array of n cells)."""
    import dask
    import dask.array as da

    segs = _segments(gen, n, seg)
    force = _exact.forced_mode()  # carried in the graph: forced on any scheduler
    bounds = []
    for s0, s1, _, _ in segs:
        bounds += [(a, min(s1, a + _BLOCK)) for a in range(s0, s1, _BLOCK)]
    blocks = [dask.delayed(_block, pure=True)(a, e, segs, kind, t, key_src, force)
              for a, e in bounds]
    done = dask.delayed(_finish, pure=True)(blocks, segs, kind, t, key_src, force)
    parts = [da.from_delayed(dask.delayed(_patch, pure=True)(b, a, done), (e - a,),
                             dtype=np.int64) for b, (a, e) in zip(blocks, bounds)]
    return da.concatenate(parts) if parts else da.zeros(0, np.int64)


def _as_dask(darr: da.Array) -> da.Array:
    if not (hasattr(darr, "map_blocks") and hasattr(darr, "chunks")
            and hasattr(darr, "dtype")):
        raise TypeError(f"darr must be a dask array, got {type(darr).__name__}")
    return darr


def _generator(rng: RngLike | WorkerKey) -> tuple[_random.Generator, WorkerSource]:
    """The call's generator (its allocator gives the stream ids) and what the block tasks
    get to rebuild its key words (see the module docstring: fresh noise per call)."""
    if isinstance(rng, WorkerKey):
        rid = keynoise.fresh_release_id()
        return keynoise.keyed_generator(rng.load(), rid), (rng, rid)
    if rng is None:
        gen = _random.default_rng()  # a fresh urandom key: only this call's noise
    else:
        gen, _ = keynoise.release_generator(rng)
    return gen, gen.streams.key_words


def _add_int(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``x + z`` in x's dtype, OverflowError if a cell does not fit (the integer samplers'
    own checked add, :func:`dpfast.noise.integers._add_checked`)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    return integers._add_checked(flat, z.reshape(-1), x.dtype).reshape(x.shape)


def _discrete(kind: int, darr: da.Array, param: npt.ArrayLike, name: str,
              rng: RngLike | WorkerKey) -> da.Array:
    darr = _as_dask(darr)
    dt = np.dtype(darr.dtype)
    if dt == np.bool_ or dt.kind not in "iu":
        raise TypeError(f"darr must hold integers, got dtype {dt}")
    parsed, pshape = _drive.parse_param(param, name)
    if pshape:
        raise TypeError(f"{name} must be a scalar for dask arrays")
    assert isinstance(parsed, Fraction)
    gen, key_src = _generator(rng)
    z = _noise(int(darr.size), kind, parsed, gen, key_src, max(int(darr.size), 1))
    z = z.reshape(darr.shape).rechunk(darr.chunks)
    import dask.array as da

    return da.map_blocks(_add_int, darr, z, dtype=dt)  # = darr.map_blocks(...)


def _grid_add(x: np.ndarray, z: np.ndarray, g: float) -> np.ndarray:
    from dpfast import noise as _noise_mod

    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    zf = np.ascontiguousarray(z).reshape(-1)
    res = np.empty(flat.size, np.float64)
    nbig = np.zeros(-(-max(1, flat.size) // _grid.GRID_BLOCK), np.int64)
    sat = _noise_mod._DBL_MAX
    _grid.grid_add(flat, zf, g, sat, res, nbig)
    if nbig.any():
        _noise_mod._grid_fix(flat, zf, g, sat, res, nbig)
    return res.reshape(x.shape)


def _float(kind: int, darr: da.Array, param: npt.ArrayLike, name: str,
           rng: RngLike | WorkerKey, gran: float | None) -> da.Array:
    from dpfast import noise as _noise_mod

    darr = _as_dask(darr)
    dt = np.dtype(darr.dtype)
    if dt == np.bool_ or dt.kind not in "iuf":
        raise TypeError(f"darr must hold real numbers, got dtype {dt}")
    parsed, pshape = _drive.parse_param(param, name, lower=_noise_mod.MIN_FLOAT_SCALE,
                                        upper=_noise_mod.MAX_FLOAT_SCALE)
    if pshape:
        raise TypeError(f"{name} must be a scalar for the float mechanisms")
    assert isinstance(parsed, Fraction)
    g = _noise_mod.granularity(float(parsed)) if gran is None else \
        _noise_mod._check_granularity(gran)
    t = parsed / Fraction(g)
    if t > _drive.MAX_SCALE or t < _drive.MIN_SCALE:
        raise ValueError(f"{name} / granularity = {_drive.describe(t)} is outside [2**-100, "
                         "2**50]")
    gen, key_src = _generator(rng)
    z = _noise(int(darr.size), kind, t, gen, key_src, max(int(darr.size), 1))
    z = z.reshape(darr.shape).rechunk(darr.chunks)
    import dask.array as da

    return da.map_blocks(_grid_add, darr, z, g, dtype=np.float64)  # = darr.map_blocks(...)


def discrete_laplace(darr: da.Array, scale: npt.ArrayLike, *,
                     rng: RngLike | WorkerKey = None) -> da.Array:
    """Lazy :func:`dpfast.discrete_laplace` of a dask array of integers.

    Parameters
    ----------
    darr : dask.array.Array of integers
        Any shape and chunking.
    scale : float, int or Fraction
        A scalar scale (per-cell scales are not supported here).
    rng : None, Generator, 32-byte key or :class:`dpfast.dask.WorkerKey`
        A generator: its stream ids are taken when this function is called (not when the
        result is computed).  A raw key or a worker key: a fresh release id per call (two
        calls never share noise; see the module docstring).  None: a fresh urandom key.

    Returns
    -------
    dask.array.Array
        Equal, bit for bit, to ``dpfast.discrete_laplace(darr.compute(), scale, rng=...)``
        with the same generator state (for a raw key: its release generator).  Computing
        it again (or a retried task) gives the same noise.

    Privacy
    -------
    That of :func:`dpfast.discrete_laplace` (``ε = Δ1 / scale`` for L1 sensitivity
    ``Δ1``, neighbouring inputs differing in the noised values; CKS20).  Distribution
    changes who computes the noise, not the noise.
    """
    return _discrete(0, darr, scale, "scale", rng)


def discrete_gaussian(darr: da.Array, sigma: npt.ArrayLike, *,
                      rng: RngLike | WorkerKey = None) -> da.Array:
    """Lazy :func:`dpfast.discrete_gaussian` of a dask array of integers (see
    :func:`discrete_laplace`).

    Privacy
    -------
    That of :func:`dpfast.discrete_gaussian`: ``ρ = Δ2² / (2σ²)``-zCDP (CKS20).
    """
    return _discrete(1, darr, sigma, "sigma", rng)


def laplace(darr: da.Array, scale: npt.ArrayLike, *, rng: RngLike | WorkerKey = None,
            granularity: float | None = None) -> da.Array:
    """Lazy :func:`dpfast.laplace` (secure grid Laplace) of a dask array (see
    :func:`discrete_laplace`).

    Privacy
    -------
    That of :func:`dpfast.laplace`: ``ε = (Δ1 + g) / b`` (Google DP team, "Secure Noise
    Generation").

    Numerics
    --------
    As :func:`dpfast.laplace`: the exact grid value rounded once.
    """
    return _float(0, darr, scale, "scale", rng, granularity)


def gaussian(darr: da.Array, sigma: npt.ArrayLike, *, rng: RngLike | WorkerKey = None,
             granularity: float | None = None) -> da.Array:
    """Lazy :func:`dpfast.gaussian` (secure grid Gaussian) of a dask array (see
    :func:`discrete_laplace`).

    Privacy
    -------
    That of :func:`dpfast.gaussian`: ``ρ = Δ2'² / (2σ²)``-zCDP with ``Δ2' = Δ2 + g sqrt(d)``.

    Numerics
    --------
    As :func:`dpfast.gaussian`.
    """
    return _float(1, darr, sigma, "sigma", rng, granularity)
