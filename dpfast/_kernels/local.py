"""Local-DP kernels: exact bit-sliced Bernoulli lanes, seeded hashing, clients, aggregation.

Exact Bernoulli lanes
---------------------
Every randomized decision of the local mechanisms has the form "is U < c?" for a uniform
U on [0, 1) and a threshold c that is either irrational (``e^eps / (e^eps + k - 1)``,
``1 / (1 + e^(eps/2))`` ...) or a binary rational (RAPPOR's ``f, p, q`` given as floats).
:func:`bern_lanes` decides 64 such comparisons at once by comparing the binary expansions
of 64 independent uniforms with the expansion of c, one bit plane (one random 64-bit word)
at a time: a lane is decided at the first bit where its uniform differs from c.  This is
exact for any c whose expansion is supplied: ``cw`` holds the leading 64-bit words of c's
expansion (``floor(c * 2^(64 len(cw)))``), and ``terminal`` says whether c's expansion
ends there (a binary rational).  A lane whose uniform agrees with every supplied bit of a
non-terminal c (probability ``2^-64`` per lane for a one-word expansion) is reported as
*undecided*; the caller finishes it exactly in Python (``dpfast.noise._exact``: its uniform is
refined lazily and c enclosed by integer interval arithmetic).  Nothing is resampled.
Expected cost: about 7.4 random words per 64 lanes.

Hashing
-------
* Fingerprints: items are mapped to 64-bit fingerprints by the caller (integers: their
  two's-complement bit pattern; strings: BLAKE2b of the UTF-8 bytes, see dpfast.local).
* :func:`mas_hash`: Dietzfelbinger's multiply-add-shift hash of a 64-bit fingerprint
  ``x = (x_hi, x_lo)`` to 32 bits, ``((a0 x_lo + a1 x_hi + b) mod 2^64) >> 32`` with three
  64-bit parameters; strongly universal (2-independent and uniform) over random
  parameters (Thorup, "High speed hashing for integers and strings", 2015, sec. 3.4).
  Used by OLH, where every user draws her own parameters.
* :func:`tab_hash`: simple tabulation hashing of the 8 bytes of a fingerprint with one
  ``(8, 256)`` table of random 32-bit words per hash function: 3-independent
  (Patrascu & Thorup, "The power of simple tabulation hashing", 2012), and different hash
  functions are independent.  Used by the count-mean sketches and RAPPOR's Bloom filters.
* :func:`bucket` maps a 32-bit hash to ``[0, m)`` by ``(h * m) >> 32`` (exactly uniform
  for ``m`` a power of two; otherwise bucket probabilities differ from ``1/m`` by less
  than ``2^-32``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.chacha import ST_POS, next_u64
from dpfast._kernels.uniform import below

ZERO = np.uint64(0)
ONE = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
M8 = np.uint64(0xFF)


# ----------------------------------------------------------------------------- primitives
@nb.njit(cache=True, inline="always")
def lane_mask(m):
    """Mask of the low ``m`` lanes, 1 <= m <= 64."""
    if m >= 64:
        return ALL
    return (ONE << np.uint64(m)) - ONE


@nb.njit(cache=True, inline="always")
def bern_lanes(buf, pos, st, key, nonce, cw, terminal, lanes, force):
    """(res, und, pos): exact Bernoulli(c) for the lanes in ``lanes``.

    ``res`` has the lanes decided 1, ``und`` the undecided ones (see the module doc).
    ``terminal``: 0 = c's expansion continues past ``cw`` (undecided lanes are returned),
    1 = c equals ``cw`` exactly (lanes equal to it so far are >= c: decided 0), 2 = c is
    1 (``cw`` empty: every lane decided 1).  With ``force`` every lane is returned
    undecided without consuming randomness (test hook).
    """
    if force:
        return ZERO, lanes, pos
    res = ZERO
    und = lanes
    for wi in range(cw.shape[0]):
        c = cw[wi]
        for t in range(63, -1, -1):
            if und == ZERO:
                return res, und, pos
            r, pos = next_u64(buf, pos, st, key, nonce)
            if (c >> np.uint64(t)) & ONE:
                res |= und & ~r
                und &= r
            else:
                und &= ~r
    if terminal == 1:
        und = ZERO
    elif terminal == 2:
        res |= und
        und = ZERO
    return res, und, pos


@nb.njit(cache=True, inline="always")
def bern_lanes2(buf, pos, st, key, nonce, sel, c1, t1, c0, t0, lanes):
    """Exact Bernoulli lanes with per-lane binary-rational thresholds.

    Lane ``l`` uses threshold ``c1`` if bit ``l`` of ``sel`` is set, else ``c0``: finite
    expansions of the same length; a lane equal to its expansion throughout is decided
    ``t1`` / ``t0`` (0 for c equal to its expansion, 1 for c = 1 written as all ones).
    Returns (res, pos).
    """
    res = ZERO
    und = lanes
    for wi in range(c1.shape[0]):
        a = c1[wi]
        b = c0[wi]
        for t in range(63, -1, -1):
            if und == ZERO:
                return res, pos
            sh = np.uint64(t)
            m1 = ALL if (a >> sh) & ONE else ZERO
            m0 = ALL if (b >> sh) & ONE else ZERO
            cb = (sel & m1) | (~sel & m0)
            r, pos = next_u64(buf, pos, st, key, nonce)
            res |= und & cb & ~r
            und &= ~(r ^ cb)
    tails = (sel & (ALL if t1 else ZERO)) | (~sel & (ALL if t0 else ZERO))
    return res | (und & tails), pos


@nb.njit(cache=True, inline="always")
def mas_hash(a0, a1, b, x):
    """Strongly universal multiply-add-shift hash of a 64-bit fingerprint to 32 bits."""
    return (a0 * (x & M32) + a1 * (x >> S32) + b) >> S32


@nb.njit(cache=True, inline="always")
def bucket(h, m):
    """Map a 32-bit hash to [0, m) (m < 2^32)."""
    return (h * m) >> S32


@nb.njit(cache=True, inline="always")
def tab_hash(tables, f, x):
    """Simple tabulation hash number ``f`` of fingerprint ``x`` (32-bit result as uint64)."""
    t = tables[f]
    h = np.uint32(0)
    for i in range(8):
        h ^= t[i, np.int64((x >> np.uint64(8 * i)) & M8)]
    return np.uint64(h)


@nb.njit(cache=True, inline="always")
def parity(x):
    x ^= x >> np.uint64(32)
    x ^= x >> np.uint64(16)
    x ^= x >> np.uint64(8)
    x ^= x >> np.uint64(4)
    x ^= x >> np.uint64(2)
    x ^= x >> np.uint64(1)
    return x & ONE


@nb.njit(cache=True)
def hash_buckets(tables, f0, fp, m, out):
    """out[i, t] = bucket(tab_hash(tables, f0[i] + t, fp[i]), m) (server-side twin)."""
    for i in range(fp.shape[0]):
        for t in range(out.shape[1]):
            out[i, t] = np.int64(bucket(tab_hash(tables, f0[i] + t, fp[i]), np.uint64(m)))


# ----------------------------------------------------------------------------- clients
@guarded
@nb.njit(cache=True, parallel=True)
def grr_kernel(buf, st, key, nonces, chunk, base, n, x, k, out, cw, terminal, force, start,
               resume, pcount, pidx):
    """Generalized randomized response over [0, k) for cells [base, base + n).

    Keep ``x[i]`` with probability c (threshold ``cw``), else report a uniform value of the
    other ``k - 1``.  An undecided keep decision leaves ``out[i] = x[i]`` and records ``i``
    in ``pidx`` (the caller finishes it).  Chunk ``c`` covers cells
    ``[base + c*chunk, ...)`` from ``start[c]``; it stops early (``resume[c]`` < its end)
    when its pending list could overflow.
    """
    cap = pidx.shape[1]
    km1 = np.uint64(k - 1)
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        kk = pcount[c]
        i = start[c]
        while i < hi:
            if kk + 64 > cap:
                break
            m = min(64, hi - i)
            res, und, pos = bern_lanes(b, pos, s_, key, nonce, cw, terminal, lane_mask(m),
                                       force)
            for l in range(m):
                j = i + l
                v = x[j]
                bit = np.uint64(l)
                if (und >> bit) & ONE:
                    out[j] = v
                    pidx[c, kk] = j
                    kk += 1
                elif (res >> bit) & ONE:
                    out[j] = v
                elif k == 2:
                    out[j] = 1 - v
                else:
                    o, pos = below(b, pos, s_, key, nonce, km1)
                    oi = np.int64(o)
                    out[j] = oi if oi < v else oi + 1
            i += m
        resume[c] = i
        pcount[c] = kk
        s_[ST_POS] = pos


@guarded
@nb.njit(cache=True, parallel=True)
def olh_client_kernel(buf, st, key, nonces, chunk, base, n, fp, g, seeds, out, cw, terminal,
                      force, start, resume, pcount, pidx):
    """Optimal local hashing clients: draw hash parameters ``seeds[i] = (a0, a1, b)``,
    hash ``fp[i]`` to [0, g), apply g-ary randomized response (keep threshold ``cw``).

    Undecided keep decisions leave ``out[i]`` = the hashed value and record ``i``.
    """
    cap = pidx.shape[1]
    gg = np.uint64(g)
    gm1 = np.uint64(g - 1)
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        kk = pcount[c]
        i = start[c]
        while i < hi:
            if kk + 64 > cap:
                break
            m = min(64, hi - i)
            res, und, pos = bern_lanes(b, pos, s_, key, nonce, cw, terminal, lane_mask(m),
                                       force)
            for l in range(m):
                j = i + l
                a0, pos = next_u64(b, pos, s_, key, nonce)
                a1, pos = next_u64(b, pos, s_, key, nonce)
                bb, pos = next_u64(b, pos, s_, key, nonce)
                seeds[j, 0] = a0
                seeds[j, 1] = a1
                seeds[j, 2] = bb
                h = np.int64(bucket(mas_hash(a0, a1, bb, fp[j]), gg))
                bit = np.uint64(l)
                if (und >> bit) & ONE:
                    out[j] = h
                    pidx[c, kk] = j
                    kk += 1
                elif (res >> bit) & ONE:
                    out[j] = h
                else:
                    o, pos = below(b, pos, s_, key, nonce, gm1)
                    oi = np.int64(o)
                    out[j] = oi if oi < h else oi + 1
            i += m
        resume[c] = i
        pcount[c] = kk
        s_[ST_POS] = pos


@guarded
@nb.njit(cache=True, parallel=True)
def oue_kernel(buf, st, key, nonces, chunk, base, n, x, k, out, cw, terminal, force, start,
               resume, pcount, pidx):
    """Optimized unary encoding: ``out[i, x[i]]`` a fair coin, every other bit of row i
    Bernoulli(c) (threshold ``cw``).  Undecided bits are recorded as ``i * k + bit``."""
    cap = pidx.shape[1]
    nw = (k + 63) // 64
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        kk = pcount[c]
        coins = ZERO
        ncoins = 0
        i = start[c]
        while i < hi:
            if kk + k > cap:
                break
            v = x[i]
            for w in range(nw):
                lo = 64 * w
                m = min(64, k - lo)
                lanes = lane_mask(m)
                if lo <= v < lo + m:
                    lanes &= ~(ONE << np.uint64(v - lo))
                res, und, pos = bern_lanes(b, pos, s_, key, nonce, cw, terminal, lanes, force)
                for l in range(m):
                    bit = np.uint64(l)
                    out[i, lo + l] = np.uint8((res >> bit) & ONE)
                    if (und >> bit) & ONE:
                        pidx[c, kk] = i * k + lo + l
                        kk += 1
            if ncoins == 0:
                coins, pos = next_u64(b, pos, s_, key, nonce)
                ncoins = 64
            out[i, v] = np.uint8(coins & ONE)
            coins >>= ONE
            ncoins -= 1
            i += 1
        resume[c] = i
        pcount[c] = kk
        s_[ST_POS] = pos


@guarded
@nb.njit(cache=True, parallel=True)
def cms_client_kernel(buf, st, key, nonces, chunk, base, n, fp, tables, k, m, rows, bits, cw,
                      terminal, force, start, resume, pcount, pidx):
    """Count-mean sketch clients: hash index ``rows[i]`` uniform on [0, k), one-hot
    +1 at ``bucket(tab_hash(rows[i], fp[i]), m)`` (-1 elsewhere, bit 1 = +1), every
    coordinate flipped with probability c (threshold ``cw``); ``bits`` (n, ceil(m/64))
    packed little-endian.  Undecided flips are recorded as ``i * m + coordinate`` (the
    coordinate is stored unflipped)."""
    cap = pidx.shape[1]
    nw = (m + 63) // 64
    kk64 = np.uint64(k)
    mm = np.uint64(m)
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        kk = pcount[c]
        i = start[c]
        while i < hi:
            if kk + m > cap:
                break
            j, pos = below(b, pos, s_, key, nonce, kk64)
            rows[i] = np.int64(j)
            h = np.int64(bucket(tab_hash(tables, np.int64(j), fp[i]), mm))
            for w in range(nw):
                lo = 64 * w
                mw = min(64, m - lo)
                res, und, pos = bern_lanes(b, pos, s_, key, nonce, cw, terminal,
                                           lane_mask(mw), force)
                one = ZERO
                if lo <= h < lo + mw:
                    one = ONE << np.uint64(h - lo)
                bits[i, w] = one ^ (res & ~und)
                if und != ZERO:
                    for l in range(mw):
                        if (und >> np.uint64(l)) & ONE:
                            pidx[c, kk] = i * m + lo + l
                            kk += 1
            i += 1
        resume[c] = i
        pcount[c] = kk
        s_[ST_POS] = pos


@guarded
@nb.njit(cache=True, parallel=True)
def hcms_client_kernel(buf, st, key, nonces, chunk, base, n, fp, tables, k, m, rows, cols,
                       out, cw, terminal, force, start, resume, pcount, pidx):
    """Hadamard count-mean sketch clients: row ``j`` uniform on [0, k), column ``l``
    uniform on [0, m) (m a power of two), the Hadamard entry ``H[h, l]`` (h the hashed
    item; bit 1 = +1) flipped with probability c.  Undecided flips leave the unflipped
    bit and record ``i``."""
    cap = pidx.shape[1]
    kk64 = np.uint64(k)
    mm = np.uint64(m)
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        kk = pcount[c]
        i = start[c]
        while i < hi:
            if kk + 64 > cap:
                break
            mlanes = min(64, hi - i)
            res, und, pos = bern_lanes(b, pos, s_, key, nonce, cw, terminal,
                                       lane_mask(mlanes), force)
            for l in range(mlanes):
                t = i + l
                j, pos = below(b, pos, s_, key, nonce, kk64)
                col, pos = below(b, pos, s_, key, nonce, mm)
                rows[t] = np.int64(j)
                cols[t] = np.int64(col)
                h = bucket(tab_hash(tables, np.int64(j), fp[t]), mm)
                e = ONE ^ parity(h & col)
                bit = np.uint64(l)
                if (und >> bit) & ONE:
                    out[t] = np.uint8(e)
                    pidx[c, kk] = t
                    kk += 1
                else:
                    out[t] = np.uint8(e ^ ((res >> bit) & ONE))
            i += mlanes
        resume[c] = i
        pcount[c] = kk
        s_[ST_POS] = pos
