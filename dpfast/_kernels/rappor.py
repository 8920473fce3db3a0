"""RAPPOR kernels: keyed cohorts and permanent randomized responses, and the
instantaneous randomized response on exact Bernoulli lanes (:mod:`dpfast._kernels.local`)."""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.chacha import ST_POS, chacha_words, next_u64
from dpfast._kernels.local import (
    M32,
    ONE,
    S32,
    ZERO,
    bern_lanes,
    bern_lanes2,
    bucket,
    lane_mask,
    tab_hash,
)
from dpfast._kernels.uniform import mul64


@nb.njit(cache=True, inline="always")
def _client_block(secret, cid, tag, ncoh, blk, ckey):
    """Client PRF: block 0 of ChaCha20(secret, nonce = (cid, tag)) as 8 uint64 words
    (``blk``).  Words 0-3 are the client key (``ckey``, 8 uint32); the cohort, uniform on
    [0, ncoh), is drawn exactly (Lemire) from words 4-7, continuing with blocks 1, 2, ...
    in the (astronomically rare) case all four are rejected.  Returns the cohort."""
    nonce = np.empty(3, np.uint32)
    nonce[0] = np.uint32(cid & M32)
    nonce[1] = np.uint32(cid >> S32)
    nonce[2] = np.uint32(tag)
    chacha_words(secret, nonce, 0, blk)
    for t in range(4):
        ckey[2 * t] = np.uint32(blk[t] & M32)
        ckey[2 * t + 1] = np.uint32(blk[t] >> S32)
    span = np.uint64(ncoh)
    thr = (ZERO - span) % span
    counter = 0
    first = 4
    while True:
        for t in range(first, 8):
            hi_, lo = mul64(blk[t], span)
            if lo >= thr:
                return np.int64(hi_)
        counter += 1
        first = 0
        chacha_words(secret, nonce, counter, blk)


@guarded
@nb.njit(cache=True, parallel=True)
def rappor_cohorts(secret, ids, ncoh, tag, out):
    """Cohort of each client (see :func:`_client_block`)."""
    for i in nb.prange(ids.shape[0]):
        blk = np.empty(8, np.uint64)
        ckey = np.empty(8, np.uint32)
        out[i] = _client_block(secret, ids[i], tag, ncoh, blk, ckey)


@guarded
@nb.njit(cache=True, parallel=True)
def rappor_prr(secret, ids, fp, ncoh, tables, h, m, fw, ft, tag, cohorts, prr):
    """Permanent randomized response of each (client, value): the Bloom filter of
    ``fp[i]`` in the client's cohort (h tabulation hashes into m bits), each bit replaced
    by a fair coin with probability f (binary-rational expansion ``fw``, terminal ``ft``).
    The randomness is the ChaCha20 stream under the client key of
    :func:`_client_block` with nonce ``(fp_lo, fp_hi, tag + 1)``: a deterministic
    function of (secret, id, value).  Also writes the cohorts."""
    nw = (m + 63) // 64
    mm = np.uint64(m)
    n = ids.shape[0]
    for i in nb.prange(n):
        blk = np.empty(8, np.uint64)
        ckey = np.empty(8, np.uint32)
        coh = _client_block(secret, ids[i], tag, ncoh, blk, ckey)
        cohorts[i] = coh
        nonce = np.empty(3, np.uint32)
        x = fp[i]
        nonce[0] = np.uint32(x & M32)
        nonce[1] = np.uint32(x >> S32)
        nonce[2] = np.uint32(tag + 1)
        buf = np.empty(8, np.uint64)
        st = np.zeros(5, np.int64)
        pos = 8  # empty: the first draw computes block 0
        bloom = np.zeros(nw, np.uint64)
        for t in range(h):
            p = np.int64(bucket(tab_hash(tables, coh * h + t, x), mm))
            bloom[p // 64] |= ONE << np.uint64(p % 64)
        for w in range(nw):
            lanes = lane_mask(min(64, m - 64 * w))
            rnd, und, pos = bern_lanes(buf, pos, st, ckey, nonce, fw, ft, lanes, False)
            coin, pos = next_u64(buf, pos, st, ckey, nonce)
            prr[i, w] = ((bloom[w] & ~rnd) | (rnd & coin)) & lanes


@guarded
@nb.njit(cache=True, parallel=True)
def rappor_irr_kernel(buf, st, key, nonces, chunk, base, n, prr, m, qw, qt, pw, pt, out,
                      start, resume):
    """Instantaneous randomized response: each report bit is 1 with probability q where
    the permanent bit is 1 and p where it is 0 (binary rationals, exact, never pending)."""
    nw = (m + 63) // 64
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        i = start[c]
        while i < hi:
            for w in range(nw):
                lanes = lane_mask(min(64, m - 64 * w))
                r, pos = bern_lanes2(b, pos, s_, key, nonce, prr[i, w], qw, qt, pw, pt, lanes)
                out[i, w] = r
            i += 1
        resume[c] = i
        s_[ST_POS] = pos


# ----------------------------------------------------------------------------- servers
