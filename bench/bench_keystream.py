"""Keystream throughput: dpfast vs cryptography's ChaCha20 (OpenSSL) vs numpy PCG64.

Targets (issue 40): the C block function >= 0.95x cryptography's ChaCha20 ``update_into``
on AVX2 and on AVX-512 hosts (the path chosen at run time), and >= 1.0x numpy PCG64
``random_raw``, single core.  Run pinned to one core:
``taskset -c 1 python -m pytest bench/bench_keystream.py --benchmark-only``.

The same work on both sides: 16 MiB of keystream per call into a buffer allocated once
(OpenSSL encrypts 16 MiB of zeros, so it also reads an input dpfast does not have);
``dpfast.keystream`` and ``Generator.random_raw`` (which return a new object) against
cryptography's allocating ``update`` (a fresh output buffer each side); and what the
samplers run, the kernels' 16 KiB refills (a numba kernel calling the block function for
256 blocks at a time and reading them), for the same 16 MiB.  Each call is one call into
C (or numba), so the Python overhead per call (microseconds) is below 0.1% of a call.

Every ratio is the median of interleaved pairs with its spread (``_timing.pairs``), in
wall time and in this thread's CPU time (``time.thread_time``: on a shared host, time
spent descheduled is not counted); the report gives the load average beside them.
"""

from __future__ import annotations

import os
import time

import _timing as _t
import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

import dpfast
from dpfast import _native
from dpfast import random as dr

NBYTES = 1 << 24  # 16 MiB per call
KEY = bytes(range(32))


def _dpfast_fill():
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = dr._nonce_words([3])[0]
    out = np.empty(NBYTES // 4, np.uint32)
    return lambda: _native.chacha20_blocks(key_words, nonce, 0, NBYTES // 64, out)


def _refill_fill():
    """What the samplers run: a numba kernel refilling a 16 KiB buffer from its stream
    (``dpf_chacha20_blocks`` called by name, 256 blocks a call) and reading it, for the
    same 16 MiB (``dpfast.perf``'s ``kernel_refill`` entry, the same call)."""
    from dpfast.perf.suite import kernel_refills

    return kernel_refills(NBYTES // 8)


def _openssl_fill():
    src = bytes(NBYTES)
    dst = bytearray(NBYTES)

    def run() -> None:
        enc = Cipher(algorithms.ChaCha20(KEY, bytes(16)), mode=None).encryptor()
        enc.update_into(src, dst)

    return run


def _openssl_alloc():
    src = bytes(NBYTES)

    def run() -> None:
        Cipher(algorithms.ChaCha20(KEY, bytes(16)), mode=None).encryptor().update(src)

    return run


def _pcg_fill():
    bg = np.random.PCG64(1)
    return lambda: bg.random_raw(NBYTES // 8)


def _cpu_timed(fns):
    """``fns`` wrapped to record this thread's CPU seconds per call, and those records:
    ``_t.pairs`` calls every function once a round, so record ``r`` of each function is
    its round ``r`` (the same interleaved pairs, timed by CPU)."""
    times: list[list[float]] = [[] for _ in fns]

    def wrap(fn, rec):
        def run():
            c = time.thread_time()
            fn()
            rec.append(time.thread_time() - c)
        return run

    return [wrap(fn, rec) for fn, rec in zip(fns, times)], times


def test_keystream_throughput(benchmark, report) -> None:
    ours = _dpfast_fill()
    gen = dpfast.default_rng(KEY)
    fns, cpu_times = _cpu_timed([ours, _openssl_fill(), _pcg_fill(),
                                 lambda: gen.random_raw(NBYTES // 8), _openssl_alloc(),
                                 lambda: dpfast.keystream(KEY, 3, NBYTES), _refill_fill()])
    for fn in fns:  # warm-up: first-touch page faults and lazy set-up, untimed
        fn()
    for rec in cpu_times:
        rec.clear()
    load = os.getloadavg()[0]
    p = _t.pairs(fns, repeat=21)
    cpu = _t.Pairs(cpu_times)
    t_dp, t_ssl, t_pcg, t_gen, t_ssl_alloc, t_ks, t_refill = (p.median(i) for i in range(7))
    benchmark.pedantic(ours, rounds=5, iterations=1)
    r_ssl = p.ratio(1, 0)
    r_pcg = p.ratio(2, 0)
    info = {
        "dpfast_GBps": NBYTES / t_dp / 1e9,
        "cryptography_GBps": NBYTES / t_ssl / 1e9,
        "pcg64_GBps": NBYTES / t_pcg / 1e9,
        "generator_random_raw_GBps": NBYTES / t_gen / 1e9,
        "ratio_vs_cryptography": r_ssl,
        "ratio_vs_pcg64": r_pcg,
        "simd_level": _native.simd_level(),
        "keystream_GBps": NBYTES / t_ks / 1e9,
        "kernel_refill_GBps": NBYTES / t_refill / 1e9,
        **p.info(1, 6, "kernel_refill_ratio_vs_cryptography"),
        **cpu.info(1, 6, "kernel_refill_cpu_ratio_vs_cryptography"),
        "keystream_ratio_vs_cryptography_alloc": p.ratio(4, 5),
        "random_raw_ratio_vs_cryptography_alloc": p.ratio(4, 3),
        **p.info(1, 0, "ratio_vs_cryptography"),
        **cpu.info(1, 0, "cpu_ratio_vs_cryptography"),
        "load_average_1min": load,
    }
    path = {3: "AVX-512F 16-lane", 2: "AVX2 8-lane", 1: "portable 8-lane"}[info["simd_level"]]
    benchmark.extra_info.update(info)
    report("keystream", f"dpfast {info['dpfast_GBps']:.2f} GB/s = {p.describe(1, 0)} cryptography "
           f"ChaCha20 ({info['cryptography_GBps']:.2f} GB/s), {r_pcg:.2f}x numpy PCG64 "
           f"({info['pcg64_GBps']:.2f} GB/s); Generator.random_raw "
           f"{info['generator_random_raw_GBps']:.2f} GB/s "
           f"({info['random_raw_ratio_vs_cryptography_alloc']:.2f}x cryptography update); "
           f"keystream {info['keystream_GBps']:.2f} GB/s "
           f"({info['keystream_ratio_vs_cryptography_alloc']:.2f}x); kernels' 16 KiB refills "
           f"{info['kernel_refill_GBps']:.2f} GB/s = {p.describe(1, 6)} (CPU "
           f"{cpu.describe(1, 6)}); path {path}; "
           f"thread CPU time: {cpu.describe(1, 0)} cryptography ChaCha20, keystream "
           f"{cpu.describe(4, 5)}; load average {load:.1f}")
