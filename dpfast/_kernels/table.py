"""The envelope-table kernel: discrete Laplace / Gaussian by rejection from an exact
alias-table envelope (tables built by ``dpfast.noise._envelope``).

Same driver-kernel contract as :mod:`dpfast._kernels.samplers` (streams, io, pending
rows, modes, force modes).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels.chacha import (
    ST_CELL,
    ST_END,
    ST_NSIGNS,
    ST_OVERFLOW,
    ST_PENDING,
    ST_POS,
    ST_SIGNS,
    next_u64,
)
from dpfast._kernels.samplers import (
    FORCE_ACCEPT,
    INV64,
    P_A,
    P_B,
    P_BITS,
    P_CELL,
    P_SIGN,
    P_STATUS,
    PENDING_ENV_ACCEPT,
    PENDING_ENV_TAIL,
    REL,
    U_W,
    U_W2,
    _store,
)


@nb.njit(cache=True, _nrt=False, inline="always")
def env_decide(g, eg, f, u_lo, u_hi):
    """Decide U < f exp(-g') with |g' - g| <= eg, f in (0, 1] known to 2^-52 relative,
    U in [u_lo, u_hi]: 1 (yes), 0 (no) or -1 (undecided)."""
    if eg > 2.0 ** -20:
        return -1
    gh = g + eg
    if gh < 1.0:
        lo = (1.0 - gh * (1.0 - gh * (0.5 - gh * (1.0 / 6.0))) - 2.0 ** -50) * f
        if u_hi <= lo * (1.0 - 2.0 ** -50):
            return 1
        gl = max(g - eg, 0.0)
        hi = (1.0 - gl * (1.0 - 0.5 * gl) + 2.0 ** -50) * f
        if u_lo >= hi * (1.0 + 2.0 ** -50):
            return 0
    e = math.exp(-g)
    err = e * (eg * (1.0 + eg) * 1.01 + REL) + 2.0 ** -1070
    if u_hi <= (e - err) * f * (1.0 - 2.0 ** -50):
        return 1
    if u_lo >= (e + err) * f * (1.0 + 2.0 ** -50):
        return 0
    return -1


@nb.njit(cache=True, _nrt=False)
def _decide_slow(law, b, pos, s_, key, nonce, f, item, off, m, a, ux, coef, p, forced):
    """The acceptance test the fast squeeze left open: the float certificate on U's
    ``64 - p`` known bits, then (p > 0) on one more word.  Returns (decision 1 / 0 / -1
    undecided, pos, bits of U known, the extra word).  Kept out of line: it runs for
    a small fraction of proposals, and inlined it would crowd the hot loop's registers."""
    ubits = 64 - p
    uscale = math.ldexp(1.0, -ubits)
    if forced:
        return -1, pos, ubits, np.uint64(0)
    # x(k) - x(a): off / t, or off (k + a) / (2 sigma^2); roundings << eg
    g = np.float64(off) * coef
    if law == 1:
        g *= np.float64(m + a)
    eg = g * 2.0 ** -50
    uf = np.float64(ux) * uscale
    dec = env_decide(g, eg, f[item], uf * (1.0 - 2.0 ** -52), uf * (1.0 + 2.0 ** -52) + uscale)
    if dec < 0 and p > 0:
        wv, pos = next_u64(b, pos, s_, key, nonce)
        uf2 = (np.float64(ux) + np.float64(wv) * INV64) * uscale
        sc2 = uscale * INV64
        dec = env_decide(g, eg, f[item], uf2 * (1.0 - 2.0 ** -52),
                         uf2 * (1.0 + 2.0 ** -52) + sc2)
        return dec, pos, ubits + 64, wv
    return dec, pos, ubits, np.uint64(0)


@nb.njit(cache=True, parallel=True, _nrt=False)
def table_kernel(law, streams, io, table, force, pend):
    """Discrete Laplace (law 0, coef = 1/t) or Gaussian (law 1, coef = 1/(2 sigma^2)) by
    rejection from the envelope table of ``dpfast.noise._envelope``:
    ``table = (thresh, alias, f, nbins, p, cbits, coef, ta, trm1, flo)``.

    One proposal per loop turn.  The acceptance test U < f_i exp(-g) first tries a
    squeeze that needs no exp and no polynomial: for p = 0 (g = 0) two integer
    comparisons of U's word with the certified thresholds ``ta[i] <= f_i 2^64 <=
    trm1[i] + 1``; for p > 0 the bound exp(-g) >= 1 - g with ``flo[i] <= f_i`` (both
    rounded to the safe side, see ``dpfast.noise._envelope.squeeze_bounds``).  What it
    leaves open goes to the full certificate (:func:`_decide_slow`), and what that
    leaves open becomes pending.  The decisions, and so the output, are those of the
    exact test: the squeeze only decides sooner.

    Pending: status 4 = acceptance undecided (U's prefix u64s[..., U_W] [and U_W2] of
    ints[..., P_BITS] bits), status 5 = the proposal chose the tail item (finished in
    Python); ints[..., P_A] = m, ints[..., P_B] = item."""
    buf, st, key, nonces = streams
    x, out, mode = io
    thresh, alias, f, nbins, p, cbits, coef, ta, trm1, flo = table
    ints, u64s = pend
    cap = ints.shape[1]
    vmask = (np.uint64(1) << np.uint64(64 - cbits)) - np.uint64(1)
    cshift = np.uint64(64 - cbits)
    pshift = np.uint64(64 - p) if p > 0 else np.uint64(0)
    umask = (np.uint64(1) << np.uint64(64 - p)) - np.uint64(1) if p > 0 else np.uint64(0)
    uscale = math.ldexp(1.0, p - 64)
    forcing = force == FORCE_ACCEPT
    for c in nb.prange(buf.shape[0]):
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        signs = np.uint64(s_[ST_SIGNS])
        nsigns = s_[ST_NSIGNS]
        k = s_[ST_PENDING]
        i = s_[ST_CELL]
        hi = s_[ST_END]
        first = True  # the next acceptance test is the cell's first (FORCE_ACCEPT)
        while i < hi and k < cap:
            xw, pos = next_u64(b, pos, s_, key, nonce)
            col = np.int64(xw >> cshift)
            item = col if (xw & vmask) < thresh[col] else alias[col]
            if item > nbins:
                continue  # padding: reject
            if nsigns == 0:
                signs, pos = next_u64(b, pos, s_, key, nonce)
                nsigns = 64
            sg = np.int64(signs & np.uint64(1))
            signs = signs >> np.uint64(1)
            nsigns -= 1
            status = 0
            m = np.int64(0)
            ux = np.uint64(0)
            wv = np.uint64(0)
            nbits = 0
            if item == nbins:
                status = PENDING_ENV_TAIL
            else:
                yw, pos = next_u64(b, pos, s_, key, nonce)
                if p > 0:
                    off = np.int64(yw >> pshift)
                    ux = yw & umask
                else:
                    off = np.int64(0)
                    ux = yw
                a = item << p
                m = a + off
                if sg == 1 and m == 0:
                    continue
                dec = -1
                if not forcing:
                    if p == 0:
                        if ux < ta[item]:
                            dec = 1
                        elif ux > trm1[item]:
                            dec = 0
                    else:
                        # g <= gh (g's roundings are < 2^-50 relative); exp(-g) >= 1 - gh
                        gh = np.float64(off) * coef
                        if law == 1:
                            gh *= np.float64(m + a)
                        gh *= 1.0 + 2.0 ** -48
                        if gh < 0.5:
                            u_hi = np.float64(ux + np.uint64(1)) * uscale * (1.0 + 2.0 ** -50)
                            if u_hi <= flo[item] * (1.0 - gh):
                                dec = 1
                if dec < 0:
                    dec, pos, nbits, wv = _decide_slow(law, b, pos, s_, key, nonce, f, item,
                                                       off, m, a, ux, coef, p,
                                                       forcing and first)
                first = False
                if dec == 0:
                    continue  # rejected: next proposal for the same cell
                if dec < 0:
                    status = PENDING_ENV_ACCEPT
            if status == 0:
                if not _store(x, out, mode, i, -m if sg == 1 else m):
                    s_[ST_OVERFLOW] = 1
                    break
            else:
                ints[c, k, P_CELL] = i
                ints[c, k, P_STATUS] = status
                ints[c, k, P_SIGN] = sg
                ints[c, k, P_A] = m
                ints[c, k, P_B] = item
                ints[c, k, P_BITS] = nbits
                u64s[c, k, U_W] = ux
                u64s[c, k, U_W2] = wv
                k += 1
            i += 1
            first = True
        s_[ST_CELL] = i
        s_[ST_PENDING] = k
        s_[ST_POS] = pos
        s_[ST_SIGNS] = np.int64(signs)
        s_[ST_NSIGNS] = nsigns
