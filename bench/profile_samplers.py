"""Where the time of the exact samplers goes, one core, 10^7 cells (issue 40).

Run: ``PYTHONPATH=. python bench/profile_samplers.py [--cells N] [--rounds R]``.

Prints, for discrete Laplace (scale 10, 1000) and discrete Gaussian (sigma 10) (and, for
the grid ``laplace`` / ``gaussian``, the three ways of writing the output vs numpy):

* ``keystream``: the C ChaCha20 refills alone (the kernels' own path: a 16 KiB buffer
  refilled from the chunk's stream and read), for the number of words the sampler really
  consumed in that call (counted from the chunks' stream states);
* ``memory pass``: ``x += 1`` in place over the int64 array (the read and write of every
  cell that a fused in-place sampler cannot avoid; the *store*);
* ``page faults``: filling a freshly allocated array minus filling a reused one (what a
  new output costs before a single sample: the first touch of every page);
* the sampler in place (``out=x``), into a separate warm ``out``, and allocating (numpy's
  convention: a new output array); x holds written values (a never-written ``np.zeros``
  reads the kernel's shared zero page, which costs no memory traffic at all);
* numpy's ``Generator.laplace`` (allocating; the issue's baseline).

``proposal + acceptance`` is the in-place time minus keystream and memory pass: the
kernel's own arithmetic (alias-table proposal, squeeze / certificate of the acceptance
test, rejected proposals).  Every time is the median of interleaved rounds; ratios are the
median of the per-round ratios with their min-max spread (never best-of).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _timing as _t  # noqa: E402

import dpfast  # noqa: E402
from dpfast._kernels import chacha as _ck  # noqa: E402
from dpfast.noise import _chunks, _drive  # noqa: E402

KEY = bytes(range(32))


def words_used(fn, x: np.ndarray, param: float) -> int:
    """Keystream words one call really consumed (refilled blocks minus unread words)."""
    states: list[np.ndarray] = []
    real = _chunks.CallStreams.batch

    def spy(self, b):
        bt = real(self, b)
        states.append(bt.st)
        return bt

    _drive.CallStreams.batch = spy  # type: ignore[method-assign]
    try:
        fn(x, param, rng=KEY, out=x)
    finally:
        _drive.CallStreams.batch = real  # type: ignore[method-assign]
    total = 0
    for st in states:
        total += int(st[:, _ck.ST_BLOCK].sum()) * 8 - int((_chunks.REFILL_WORDS
                                                           - st[:, _ck.ST_POS]).sum())
    return total


def keystream_fn(nwords: int):
    """The kernels' refill path producing ``nwords`` words (``dpfast.perf``'s
    ``kernel_refill`` call)."""
    from dpfast.perf.suite import kernel_refills

    return kernel_refills(nwords)


def profile(name: str, fn, param: float, n: int, rounds: int) -> None:
    x = (np.arange(n) % 64).astype(np.int64)  # written pages, as real data
    y = x.copy()
    out = np.ones(n, np.int64)
    npr = np.random.default_rng(1)
    gen = dpfast.default_rng(KEY)
    words = words_used(fn, x.copy(), param)
    fns = [
        lambda: npr.laplace(0.0, param, n),                 # 0 numpy (allocating)
        keystream_fn(words),                                # 1 keystream alone
        lambda: np.add(y, 1, out=y),                        # 2 memory pass (store)
        lambda: np.empty(n, np.int64).fill(0),              # 3 fill a new array
        lambda: out.fill(0),                                # 4 fill a reused array
        lambda: fn(y, param, rng=gen, out=y),               # 5 in place
        lambda: fn(x, param, rng=gen, out=out),             # 6 separate warm out
        lambda: fn(x, param, rng=gen),                      # 7 allocating
    ]
    for f in fns:
        f()
    p = _t.pairs(fns, repeat=rounds)
    ms = [p.median(i) * 1e3 for i in range(len(fns))]
    arith = ms[5] - ms[1] - ms[2]
    faults = ms[3] - ms[4]
    print(f"\n{name}, {n:.0e} cells, one core; {words / n:.3f} keystream words per cell")
    rows = [
        ("keystream (refills, same words)", ms[1], f"in place / keystream {p.describe(5, 1)}"),
        ("memory pass x += 1 (store)", ms[2], ""),
        ("proposal + acceptance (rest)", arith, ""),
        ("page faults of a new output", faults, "(allocating only)"),
        ("sampler in place (out=x)", ms[5], p.describe(0, 5) + " numpy"),
        ("sampler into a separate out", ms[6], p.describe(0, 6) + " numpy; in place / separate "
         + p.describe(5, 6)),
        ("sampler allocating", ms[7], p.describe(0, 7) + " numpy"),
        ("numpy Generator.laplace", ms[0], ""),
    ]
    for label, v, note in rows:
        print(f"  {label:34s} {v:8.1f} ms  {100 * v / ms[5]:5.0f}% of in place  {note}")


def profile_grid(name: str, fn, param: float, n: int, rounds: int) -> None:
    """The grid samplers (float64): in place, separate warm out, allocating, vs numpy."""
    x = (np.arange(n) % 64).astype(np.float64)
    y = x.copy()
    out = np.ones(n)
    npr = np.random.default_rng(1)
    gen = dpfast.default_rng(KEY)
    fns = [lambda: npr.laplace(0.0, param, n),
           lambda: fn(y, param, rng=gen, out=y),
           lambda: fn(x, param, rng=gen, out=out),
           lambda: fn(x, param, rng=gen)]
    for f in fns:
        f()
    p = _t.pairs(fns, repeat=rounds)
    print(f"\n{name}, {n:.0e} float64 cells, one core")
    for i, label in ((1, "in place (out=x)"), (2, "into a separate out"), (3, "allocating")):
        print(f"  {label:34s} {p.median(i) * 1e3:8.1f} ms  {p.describe(0, i)} numpy")
    print(f"  {'numpy Generator.laplace':34s} {p.median(0) * 1e3:8.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10**7)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    numba.set_num_threads(1)
    try:
        cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = [ln for ln in cpu.splitlines() if ln.startswith("Model name")]
        simd = "AVX-512" if "avx512f" in cpu else "AVX2" if "avx2" in cpu else "no AVX2"
        print(f"host: {model[0].split(':', 1)[1].strip() if model else '?'}, {simd}; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    except OSError:
        pass
    for name, fn, param in (("discrete_laplace scale 10", dpfast.discrete_laplace, 10.0),
                            ("discrete_laplace scale 1000", dpfast.discrete_laplace, 1000.0),
                            ("discrete_gaussian sigma 10", dpfast.discrete_gaussian, 10.0)):
        profile(name, fn, param, args.cells, args.rounds)
    for name, fn, param in (("laplace (grid) scale 10", dpfast.laplace, 10.0),
                            ("gaussian (grid) sigma 10", dpfast.gaussian, 10.0)):
        profile_grid(name, fn, param, args.cells, args.rounds)


if __name__ == "__main__":
    main()
