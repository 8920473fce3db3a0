"""The envelope-table kernel: discrete Laplace / Gaussian by rejection from an exact
alias-table envelope (tables built by ``dpfast.noise._envelope``).

Same driver-kernel contract as :mod:`dpfast._kernels.samplers` (streams, io, pending
rows, modes, force modes).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from dpfast._kernels._launch import NO_CLAIM, claimed, next_chunk
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
    FORCE_NONE,
    FORCE_PORTABLE,
    FORCE_SCALAR,
    INV64,
    MODE_GRID,
    P_A,
    P_B,
    P_BITS,
    P_CELL,
    P_SIGN,
    P_STATUS,
    PENDING_ENV_ACCEPT,
    PENDING_ENV_TAIL,
    PENDING_GRID_BIG,
    REL,
    U_W,
    U_W2,
    UNFIT,
    chunk_count,
    either_io,
    serial_launch,
    store_either,
    unfit,
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
def _decide_slow(law, b, pos, s_, key, nonce, f, item, off, m, a, ux, coef, ubits, forced):
    """The acceptance test the fast squeeze left open: the float certificate on U's
    ``ubits`` known bits, then (``ubits < 64``) on one more word.  Returns (decision 1 / 0
    / -1 undecided, pos, bits of U known, the extra word).  Kept out of line: it runs for
    a small fraction of proposals, and inlined it would crowd the hot loop's registers."""
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
    if dec < 0 and ubits < 64:
        wv, pos = next_u64(b, pos, s_, key, nonce)
        uf2 = (np.float64(ux) + np.float64(wv) * INV64) * uscale
        sc2 = uscale * INV64
        dec = env_decide(g, eg, f[item], uf2 * (1.0 - 2.0 ** -52),
                         uf2 * (1.0 + 2.0 ** -52) + sc2)
        return dec, pos, ubits + 64, wv
    return dec, pos, ubits, np.uint64(0)


#: a direct table's entry (dpfast.noise._kernel_table.KernelTable.direct_table):
#: ``item << D_ITEM | S << D_SLOPE | A << D_ACC | R`` (csrc/table_core.h reads the same),
#: its lines on U's top ``D_UBITS`` bits of the first half at most
D_ITEM, D_SLOPE, D_ACC = 50, 34, 17
D_UBITS = 16

#: the C function of the common case (csrc/table.c); registered by dpfast._native
C_FAST_SYMBOL = "dpf_table_fast"

# _c_fast's argument kinds, in order: i (int64), a (array: its data pointer), f (float64)
_C_FAST_ARGS = "iiaiiiiiaaaaifffaaaaaaiiiiifai"


def _grid_format(fx, fout) -> int:
    """``DPF_TABLE_F64`` / ``F32`` / ``F64_F32`` (csrc/dpfast.h) of the grid store's
    input and output dtypes."""
    pair = (str(fx.dtype), str(fout.dtype))
    formats = {("float64", "float64"): 1, ("float32", "float32"): 2, ("float64", "float32"): 3}
    if pair not in formats:
        raise nb.core.errors.TypingError(f"grid store of {pair[0]} into {pair[1]}")
    return formats[pair]


@intrinsic
def _c_fast(typingctx, impl, law, b, pos, hh, hv, i, hi, x, out, fx, fout, mode, ginv, g, sat,
            pack, thresh, sel, trm1, flo, fhi, nbins, p, cbits, vb, ubits, coef, direct, dbits):
    """Call ``dpf_table_fast`` (csrc/table.c) by its symbol name: the common case of the
    table kernel from word ``pos`` of ``b`` (after the saved half ``hv`` when ``hh`` is 1)
    and cell ``i`` (< ``hi``).  Returns ``(r, pos, i, v, sg, item, ux, hh, hv)`` as int64
    (``ux``: the word's bits): ``r = 1`` stopped before a proposal the general loop takes
    (or the words ran out); ``r = 0`` the store of cell ``i`` overflowed; ``r = -1``
    (MODE_GRID) cell ``i``'s value ``v`` is too large for the float store (its word
    consumed, nothing written)."""
    args = (impl, law, b, pos, hh, hv, i, hi, x, out, fx, fout, mode, ginv, g, sat, pack,
            thresh, sel, trm1, flo, fhi, nbins, p, cbits, vb, ubits, coef, direct, dbits)
    # the C code reads raw data pointers: only C-contiguous arrays of the dtypes it expects
    want = {"b": "uint64", "x": "int64", "out": "int64", "pack": "uint64", "thresh": "uint64",
            "sel": "uint64", "trm1": "uint64", "flo": "float64", "fhi": "float64",
            "direct": "uint64", "fx": None, "fout": None}
    named = dict(b=b, x=x, out=out, fx=fx, fout=fout, pack=pack, thresh=thresh, sel=sel,
                 trm1=trm1, flo=flo, fhi=fhi, direct=direct)
    for name, arr in named.items():
        if not isinstance(arr, types.Array) or arr.ndim != 1 or arr.layout != "C" or (
                want[name] is not None and str(arr.dtype) != want[name]):
            raise nb.core.errors.TypingError(f"_c_fast: {name} must be a C-contiguous 1-d "
                                             f"{want[name] or 'float'} array, got {arr}")
    fmt = _grid_format(fx, fout)
    sig = types.UniTuple(types.int64, 9)(*args)

    def codegen(context, builder, signature, cargs):
        i64 = ir.IntType(64)
        i8p = ir.IntType(8).as_pointer()
        vals, tys = [], []
        for kind, a, t in zip(_C_FAST_ARGS, cargs, signature.args):
            if kind == "a":
                vals.append(builder.bitcast(context.make_array(t)(context, builder, a).data,
                                            i8p))
                tys.append(i8p)
            elif kind == "f":
                vals.append(context.cast(builder, a, t, types.float64))
                tys.append(ir.DoubleType())
            else:
                vals.append(context.cast(builder, a, t, types.int64))
                tys.append(i64)
        # the C argument order: b's length after b, the grid format after fout
        vals.insert(3, builder.extract_value(
            context.make_array(signature.args[2])(context, builder, cargs[2]).shape, 0))
        tys.insert(3, i64)
        vals.insert(13, ir.Constant(i64, fmt))
        tys.insert(13, i64)
        res = cgutils.alloca_once(builder, i64, size=8)
        vals.append(builder.bitcast(res, i64.as_pointer()))
        tys.append(i64.as_pointer())
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, tys),
                                            C_FAST_SYMBOL)
        r = builder.call(fn, vals)
        items = [r] + [builder.load(builder.gep(res, [ir.Constant(i64, k)]))
                       for k in range(8)]
        return context.make_tuple(builder, signature.return_type, items)

    return sig, codegen


@nb.njit(cache=True, _nrt=False, inline="always")
def _half(b, pos, st, key, nonce, hh, hv):
    """The next 32-bit half of the chunk's keystream: the saved low half ``hv`` when ``hh``
    is 1, else the next word's high half (its low half saved).  Returns ``(half, pos, hh,
    hv)``; ``hv`` is 0 when no half is saved (so a chunk's state does not depend on the
    loop that read it)."""
    if hh:
        return hv, pos, 0, np.uint64(0)
    w, pos = next_u64(b, pos, st, key, nonce)
    return w >> np.uint64(32), pos, 1, w & np.uint64(0xFFFFFFFF)


@nb.njit(cache=True, _nrt=False, inline="always")
def _next_word(b, pos, st, key, nonce, hh, hv):
    """The next 64 bits in the half-word layout: two halves (with no saved half, exactly
    the next word).  Returns ``(word, pos, hh, hv)``."""
    top, pos, hh, hv = _half(b, pos, st, key, nonce, hh, hv)
    low, pos, hh, hv = _half(b, pos, st, key, nonce, hh, hv)
    return (top << np.uint64(32)) | low, pos, hh, hv


@nb.njit(cache=True, _nrt=False, inline="always")
def _virtual_word(h1, h2, dbits, q, k1):
    """A proposal's word in the one-word layout from its two halves (csrc/table.c
    ``virtual_word``): the first half holds the index (the alias column and the alias
    value's top bits, ``dbits``), the sign and the ``k1 = 31 - dbits`` bits after it (the
    offset in the bin, then U's top bits); the second the value's other ``q`` bits and U's
    other ``32 - q`` bits."""
    one = np.uint64(1)
    d = np.uint64(dbits)
    qq = np.uint64(q)
    kk = np.uint64(k1)
    idx = h1 >> (np.uint64(32) - d)
    sgn = (h1 >> kk) & one
    ut = h1 & ((one << kk) - one)
    vlo = h2 >> (np.uint64(32) - qq)
    ulo = h2 & ((one << (np.uint64(32) - qq)) - one)
    return ((idx << (np.uint64(64) - d)) | (vlo << (np.uint64(64) - d - qq))
            | (sgn << (np.uint64(63) - d - qq)) | (ut << (np.uint64(32) - qq)) | ulo)


@nb.njit(cache=True, nogil=True, _nrt=False)
def table_kernel_serial(law, streams, io, table, force, pend, claim):
    """Discrete Laplace (law 0, coef = 1/t) or Gaussian (law 1, coef = 1/(2 sigma^2)) by
    rejection from the envelope table of ``dpfast.noise._envelope``:
    ``table = (pack, thresh, f, nbins, p, cbits, coef, ta, trm1, flo, fhi, vb, two, pa, pb,
    ubits, sel, direct, dbits)`` (``sel``: per alias column its own item, that item's
    ``ta >> (64 - ubits)``, its alias and the alias's; ``direct``: the direct table of
    ``dbits`` index bits, ``dbits = 0`` for none; both for the common case in C,
    :func:`_c_fast`).

    One proposal per loop turn, from one keystream word (two when the bin width 2^p
    leaves too few bits for U; see ``dpfast.noise._kernel_table.layout``).  A table with a
    direct table (``dbits > 0``) reads the keystream in 32-bit halves
    (each word's high half, then its low half; a saved half is kept in the chunk's
    ``ST_SIGNS`` / ``ST_NSIGNS``): a proposal's first half holds the index of the direct
    table (``dbits`` bits), the sign and the next ``k1 = 31 - dbits`` bits of the word
    (the offset's ``p`` bits, then U's top ``k1 - p``); where the
    entry's lines on those bits at that offset decide it, the proposal takes that half alone (its
    word below is that half and zeros), else the next half too (:func:`_virtual_word`).
    The decision on the word is the same for every value of the bits not read, so the
    sampler stays exact, and two proposals take one word in the common case.  Word A, from its
    top bit down: the alias column (``cbits``), the top ``vb`` bits of the alias value v
    (the column keeps its own item when ``v < thresh``; ``pack`` holds the threshold's
    top bits and the alias; on a tie of the top bits v's other bits are the top of the
    next word), the sign, then ``pa`` bits of the offset in the bin; one word: U's
    ``ubits`` bits follow; two words: word B holds the offset's other ``pb`` bits and then
    U's ``ubits = 64 - pb`` bits.  Every bit is used once.

    The acceptance test U < f_i exp(-g) first tries a squeeze that needs no exp and no
    polynomial: for p = 0 (g = 0) two integer comparisons of U's bits with the certified
    thresholds ``ta[i] <= f_i 2^64 <= trm1[i] + 1``; for p > 0 the bounds
    1 - g <= exp(-g) <= 1 - g + g^2/2 with ``flo[i] <= f_i <= fhi[i]`` (all rounded to the
    safe side, see ``dpfast.noise._envelope.squeeze_bounds``).  What it leaves open goes to the full
    certificate (:func:`_decide_slow`), and what that leaves open becomes pending.  The
    decisions, and so the output, are those of the exact test: the squeeze only decides
    sooner.

    Pending: status 4 = acceptance undecided (U's prefix u64s[..., U_W] [and U_W2] of
    ints[..., P_BITS] bits), status 5 = the proposal chose the tail item (finished in
    Python); ints[..., P_A] = m, ints[..., P_B] = item; status 6 (MODE_GRID) = a sample
    with |v| >= 2^53, ints[..., P_A] = v.

    On the calling thread, with ``io = (x, out, fx, fout, mode, grid)``
    (:func:`dpfast._kernels.samplers.either_io`: one compilation for both outputs).
    Chunks as :func:`dpfast._kernels.samplers.discrete_kernel_serial` (``claim``;
    :data:`table_kernel` runs it on several threads)."""
    buf, st, key, nonces = streams
    x, out, fx, fout, mode, grid = io
    (pack, thresh, f, nbins, p, cbits, coef, ta, trm1, flo, fhi, vb, two, pa, pb, ubits, sel,
     direct, dbits) = table
    ints, u64s = pend
    cap = ints.shape[1]
    one = np.uint64(1)
    cshift = np.uint64(64 - cbits)
    vshift = np.uint64(64 - cbits - vb)
    vmask = (one << np.uint64(vb)) - one
    lomask = (one << vshift) - one  # the threshold's bits below its top vb
    zshift = np.uint64(cbits + vb)  # v's low bits from a fresh word on a tie
    sshift = vshift - one  # the sign bit
    oshift = sshift - np.uint64(pa)  # offset bits of word A end here
    omask = (one << np.uint64(pa)) - one
    bshift = np.uint64(63 - pb)  # word B's top pb bits: (y >> 1) >> (63 - pb), 0 if pb = 0
    umask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - ubits)
    tshift = np.uint64(64 - ubits)  # U's bits as a 64-bit fraction (p = 0: one word)
    m32 = np.uint64(0xFFFFFFFF)
    uscale = math.ldexp(1.0, -ubits)
    halves = dbits > 0
    k1 = 31 - dbits if halves else 0
    hq = cbits + vb - dbits if halves else 0
    hshift = np.uint64(32 - dbits)
    # U's top bits in the first half: after the offset's p bits (wide bins)
    ku = k1 - p if halves else 0
    hus = np.uint64(max(ku - D_UBITS, 0))
    kmask = (one << np.uint64(ku)) - one
    pmask = (one << np.uint64(p)) - one
    m17 = np.uint64((1 << D_ACC) - 1)  # A and R
    m16 = np.uint64((1 << (D_ITEM - D_SLOPE)) - 1)  # S
    dqs = direct[direct.shape[0] - 1] if halves else np.uint64(0)  # the lines' shift
    forcing = force == FORCE_ACCEPT
    # FORCE_GENERAL: the general loop only; FORCE_SCALAR / FORCE_PORTABLE: the common
    # case's step-by-step / direct-table C loop, whatever the CPU (tests)
    fast = (force == FORCE_NONE or force == FORCE_SCALAR or force == FORCE_PORTABLE) and not two
    impl = 1 if force == FORCE_SCALAR else (2 if force == FORCE_PORTABLE else 0)
    ginv, gstep, gsat, gtop = grid
    check = mode == MODE_GRID and gtop >= 0  # every cell passed is checked (unfit)
    nch = buf.shape[0]
    c = next_chunk(claim, -1)
    while c < nch:
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        hh = s_[ST_NSIGNS]  # the half-word layout's saved half
        hv = np.uint64(s_[ST_SIGNS])
        k = s_[ST_PENDING]
        i = s_[ST_CELL]
        hi = s_[ST_END]
        first = True  # the next acceptance test is the cell's first (FORCE_ACCEPT)
        chk = i  # the cells from here on are not checked yet (check)
        while i < hi and k < cap:
            if fast:
                r, pos, i, v, sg, item, uxi, hh, hvi = _c_fast(
                    impl, law, b, pos, hh, hv, i, hi, x, out, fx, fout, mode, ginv, gstep, gsat,
                    pack, thresh, sel, trm1, flo, fhi, nbins, p, cbits, vb, ubits, coef, direct,
                    dbits)
                ux = np.uint64(uxi)
                hv = np.uint64(hvi)
                if check:  # the cells the C loop just read, while they are in cache
                    if unfit(fx, chk, i, gtop):
                        s_[ST_OVERFLOW] = UNFIT
                    chk = i
                if r == 0:
                    s_[ST_OVERFLOW] = 1
                    break
                if r < 0:
                    ints[c, k, P_CELL] = i
                    ints[c, k, P_STATUS] = PENDING_GRID_BIG
                    ints[c, k, P_SIGN] = sg
                    ints[c, k, P_A] = v
                    ints[c, k, P_B] = item
                    ints[c, k, P_BITS] = 0
                    u64s[c, k, U_W] = ux
                    u64s[c, k, U_W2] = np.uint64(0)
                    k += 1
                    i += 1
                    continue
                if i >= hi:
                    break
            if halves:  # one half where the direct table decides, else two
                h1, pos, hh, hv = _half(b, pos, s_, key, nonce, hh, hv)
                e = direct[h1 >> hshift]
                uh = np.int64((h1 & kmask) >> hus)
                # the entry's lines at the offset (0 for bins of width 1)
                drop = np.int64((((h1 >> np.uint64(ku)) & pmask)
                                 * ((e >> np.uint64(D_SLOPE)) & m16)) >> dqs)
                h2 = np.uint64(0)
                if not (uh < np.int64((e >> np.uint64(D_ACC)) & m17) - drop
                        or uh > np.int64(e & m17) - drop):
                    h2, pos, hh, hv = _half(b, pos, s_, key, nonce, hh, hv)
                xw = _virtual_word(h1, h2, dbits, hq, k1)
            else:
                xw, pos = next_u64(b, pos, s_, key, nonce)
            col = np.int64(xw >> cshift)
            e = pack[col]
            vh = (xw >> vshift) & vmask
            th = e & m32
            item = col if vh < th else np.int64(e >> np.uint64(32))
            # v's top bits tie with the threshold's: its other bits decide, read from the
            # next word -- unless the threshold has none (v >= thresh: the alias)
            if vh == th and (thresh[col] & lomask) != 0:
                zw, pos, hh, hv = _next_word(b, pos, s_, key, nonce, hh, hv)
                if (zw >> zshift) < (thresh[col] & lomask):
                    item = col
            sg = np.int64((xw >> sshift) & one)
            status = 0
            m = np.int64(0)
            ux = np.uint64(0)
            wv = np.uint64(0)
            nbits = 0
            if item >= nbins:
                if item > nbins:
                    continue  # padding: reject
                status = PENDING_ENV_TAIL
            else:
                off = np.int64((xw >> oshift) & omask)
                if two:
                    yw, pos = next_u64(b, pos, s_, key, nonce)
                    off = (off << pb) | np.int64((yw >> one) >> bshift)
                    ux = yw & umask
                else:
                    ux = xw & umask
                a = item << p
                m = a + off
                if (m | (sg ^ 1)) == 0:  # (negative, 0): one rarely taken branch, not
                    continue  # a branch on the random sign (mispredicted half the time)
                dec = -1
                if not forcing:
                    if p == 0:
                        if ux < (ta[item] >> tshift):
                            dec = 1
                        elif (ux << tshift) > trm1[item]:
                            dec = 0
                    else:
                        # gl <= g <= gh (g's roundings are < 2^-50 relative)
                        g0 = np.float64(off) * coef
                        if law == 1:
                            g0 *= np.float64(m + a)
                        gh = g0 * (1.0 + 2.0 ** -48)
                        if gh < 0.5:
                            uf = np.float64(ux)
                            # U < (ux + 1) 2^-ubits, rounded up (three roundings < 2^-50);
                            # exp(-g) >= 1 - gh
                            u_hi = (uf + 1.0) * uscale * (1.0 + 2.0 ** -50)
                            if u_hi <= flo[item] * (1.0 - gh):
                                dec = 1
                            else:
                                # U >= ux 2^-ubits (rounded down); exp(-g) <= 1 - gl + gl^2/2
                                # (the polynomial's roundings < 2^-50 of it, >= 0.6)
                                gl = g0 * (1.0 - 2.0 ** -48)
                                u_lo = uf * uscale * (1.0 - 2.0 ** -50)
                                if u_lo >= fhi[item] * (1.0 - gl * (1.0 - 0.5 * gl)) * (
                                        1.0 + 2.0 ** -47):
                                    dec = 0
                if dec < 0:
                    dec, pos, nbits, wv = _decide_slow(law, b, pos, s_, key, nonce, f, item,
                                                       off, m, a, ux, coef, ubits,
                                                       forcing and first)
                first = False
                if dec == 0:
                    continue  # rejected: next proposal for the same cell
                if dec < 0:
                    status = PENDING_ENV_ACCEPT
            if status == 0:
                # -m if sg else m, without a branch on the random sign
                v = (m ^ -sg) + sg
                r = store_either(x, out, fx, fout, mode, grid, i, v)
                if r == 0:
                    s_[ST_OVERFLOW] = 1
                    break
                if r < 0:
                    status = PENDING_GRID_BIG
                    m = v
            if status != 0:
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
        if check and unfit(fx, chk, i, gtop):
            s_[ST_OVERFLOW] = UNFIT
        s_[ST_CELL] = i
        s_[ST_PENDING] = k
        s_[ST_POS] = pos
        s_[ST_NSIGNS] = hh
        s_[ST_SIGNS] = np.int64(hv)
        c = next_chunk(claim, c)


def _either(args):
    law, streams, io, table, force, pend = args
    return law, streams, either_io(io), table, force, pend


#: :func:`table_kernel_serial` over the chunks on ``numba.get_num_threads()`` threads, each
#: claiming chunks as it becomes free (the chunks are independent: the same output);
#: ``io`` as the contract's ``(x, out, mode, grid)``
table_kernel = claimed(table_kernel_serial, chunk_count(1), _either)


def run_table_kernel(law, streams, io, table, force, pend):
    """:data:`table_kernel`, or for a small launch
    (:func:`dpfast._kernels.samplers.serial_launch`: nothing worth a thread)
    :func:`table_kernel_serial` on the calling thread; one compilation either way."""
    if serial_launch(streams):
        table_kernel_serial(law, streams, either_io(io), table, force, pend, NO_CLAIM)
    else:
        table_kernel(law, streams, io, table, force, pend)
