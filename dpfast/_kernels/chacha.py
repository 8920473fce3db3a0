"""ChaCha20 (RFC 8439) in numba: the kernels' own copy of the bit source.

Each kernel receives a buffer pre-filled in bulk by the C code and, should it run dry,
refills it from the same (key, nonce, counter) stream by calling the C block function
``dpf_chacha20_blocks`` by its symbol name (:func:`refill`): the compiled kernel names
the symbol, not an address, so it stays cacheable; :mod:`dpfast._native` registers the
symbol with LLVM when the kernels package loads (``dpfast._kernels.__init__``), before
any kernel can compile or load.  :func:`chacha_words`, the numba copy, is the reference
the C code is tested against (and the RAPPOR kernel's bit source).

Bit-source layout used by every kernel (one row per chunk):
    buf[c, :]   uint64 words of keystream (little-endian pairs of 32-bit words)
    st[c, ST_POS]    index of the next unused word in buf[c]
    st[c, ST_BLOCK]  block counter of the block that follows the buffer
    st[c, ST_WRAP]   set to 1 if the chunk used up all 2^64 blocks of its stream id and
                     its extensions (unreachable: 2^70 bytes; the caller raises)
    st[c, ST_SIGNS], st[c, ST_NSIGNS]  a reservoir of sign bits and its fill
    st[c, ST_CELL], st[c, ST_END]      the chunk's next cell and end (exact samplers)
    st[c, ST_PENDING]  number of pending (undecided) cells recorded this round
    st[c, ST_OVERFLOW] 1 if an addition overflowed (the chunk stopped before that cell)
    st[c, ST_FILL]   unused by the refills (they call the C function by name); callers
                     still store ``dpfast._native.blocks_address()`` there
    nonce[c, :] the chunk's 96-bit nonce as three uint32 words; nonce[c, 2] counts the
                extension streams (id + k 2^64, see dpfast._streams) the chunk moved to
    key[:]      the 256-bit key as eight uint32 words
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

M32 = np.uint64(0xFFFFFFFF)
S7 = np.uint64(7)
S8 = np.uint64(8)
S12 = np.uint64(12)
S16 = np.uint64(16)
S20 = np.uint64(20)
S24 = np.uint64(24)
S25 = np.uint64(25)
S32 = np.uint64(32)

ST_POS = 0
ST_BLOCK = 1
ST_WRAP = 2
ST_SIGNS = 3
ST_NSIGNS = 4
ST_CELL = 5
ST_END = 6
ST_PENDING = 7
ST_OVERFLOW = 8
ST_FILL = 9
ST_COLS = 10

# Kernels are compiled with NRT (reference counting) off: they allocate nothing, and
# atomic reference counting of the arrays they pass around would cost more than the
# sampling itself.
KERNEL = {"cache": True, "_nrt": False}


@nb.njit(cache=True, _nrt=False)
def block_into(key, nonce, counter, out64, off):
    """Write block ``counter`` as 8 little-endian uint64 words to out64[off:off+8].

    Allocation-free and call-free, so kernels that inline it keep their arrays out
    of reference counting."""
    s0 = np.uint64(0x61707865)
    s1 = np.uint64(0x3320646E)
    s2 = np.uint64(0x79622D32)
    s3 = np.uint64(0x6B206574)
    s4 = np.uint64(key[0])
    s5 = np.uint64(key[1])
    s6 = np.uint64(key[2])
    s7 = np.uint64(key[3])
    s8 = np.uint64(key[4])
    s9 = np.uint64(key[5])
    s10 = np.uint64(key[6])
    s11 = np.uint64(key[7])
    s12 = np.uint64(counter) & M32
    s13 = np.uint64(nonce[0])
    s14 = np.uint64(nonce[1])
    s15 = np.uint64(nonce[2])
    x0, x1, x2, x3, x4, x5, x6, x7 = s0, s1, s2, s3, s4, s5, s6, s7
    x8, x9, x10, x11, x12, x13, x14, x15 = s8, s9, s10, s11, s12, s13, s14, s15
    for _ in range(10):
        x0 = (x0 + x4) & M32
        x12 ^= x0
        x12 = ((x12 << S16) | (x12 >> S16)) & M32
        x8 = (x8 + x12) & M32
        x4 ^= x8
        x4 = ((x4 << S12) | (x4 >> S20)) & M32
        x0 = (x0 + x4) & M32
        x12 ^= x0
        x12 = ((x12 << S8) | (x12 >> S24)) & M32
        x8 = (x8 + x12) & M32
        x4 ^= x8
        x4 = ((x4 << S7) | (x4 >> S25)) & M32
        x1 = (x1 + x5) & M32
        x13 ^= x1
        x13 = ((x13 << S16) | (x13 >> S16)) & M32
        x9 = (x9 + x13) & M32
        x5 ^= x9
        x5 = ((x5 << S12) | (x5 >> S20)) & M32
        x1 = (x1 + x5) & M32
        x13 ^= x1
        x13 = ((x13 << S8) | (x13 >> S24)) & M32
        x9 = (x9 + x13) & M32
        x5 ^= x9
        x5 = ((x5 << S7) | (x5 >> S25)) & M32
        x2 = (x2 + x6) & M32
        x14 ^= x2
        x14 = ((x14 << S16) | (x14 >> S16)) & M32
        x10 = (x10 + x14) & M32
        x6 ^= x10
        x6 = ((x6 << S12) | (x6 >> S20)) & M32
        x2 = (x2 + x6) & M32
        x14 ^= x2
        x14 = ((x14 << S8) | (x14 >> S24)) & M32
        x10 = (x10 + x14) & M32
        x6 ^= x10
        x6 = ((x6 << S7) | (x6 >> S25)) & M32
        x3 = (x3 + x7) & M32
        x15 ^= x3
        x15 = ((x15 << S16) | (x15 >> S16)) & M32
        x11 = (x11 + x15) & M32
        x7 ^= x11
        x7 = ((x7 << S12) | (x7 >> S20)) & M32
        x3 = (x3 + x7) & M32
        x15 ^= x3
        x15 = ((x15 << S8) | (x15 >> S24)) & M32
        x11 = (x11 + x15) & M32
        x7 ^= x11
        x7 = ((x7 << S7) | (x7 >> S25)) & M32
        x0 = (x0 + x5) & M32
        x15 ^= x0
        x15 = ((x15 << S16) | (x15 >> S16)) & M32
        x10 = (x10 + x15) & M32
        x5 ^= x10
        x5 = ((x5 << S12) | (x5 >> S20)) & M32
        x0 = (x0 + x5) & M32
        x15 ^= x0
        x15 = ((x15 << S8) | (x15 >> S24)) & M32
        x10 = (x10 + x15) & M32
        x5 ^= x10
        x5 = ((x5 << S7) | (x5 >> S25)) & M32
        x1 = (x1 + x6) & M32
        x12 ^= x1
        x12 = ((x12 << S16) | (x12 >> S16)) & M32
        x11 = (x11 + x12) & M32
        x6 ^= x11
        x6 = ((x6 << S12) | (x6 >> S20)) & M32
        x1 = (x1 + x6) & M32
        x12 ^= x1
        x12 = ((x12 << S8) | (x12 >> S24)) & M32
        x11 = (x11 + x12) & M32
        x6 ^= x11
        x6 = ((x6 << S7) | (x6 >> S25)) & M32
        x2 = (x2 + x7) & M32
        x13 ^= x2
        x13 = ((x13 << S16) | (x13 >> S16)) & M32
        x8 = (x8 + x13) & M32
        x7 ^= x8
        x7 = ((x7 << S12) | (x7 >> S20)) & M32
        x2 = (x2 + x7) & M32
        x13 ^= x2
        x13 = ((x13 << S8) | (x13 >> S24)) & M32
        x8 = (x8 + x13) & M32
        x7 ^= x8
        x7 = ((x7 << S7) | (x7 >> S25)) & M32
        x3 = (x3 + x4) & M32
        x14 ^= x3
        x14 = ((x14 << S16) | (x14 >> S16)) & M32
        x9 = (x9 + x14) & M32
        x4 ^= x9
        x4 = ((x4 << S12) | (x4 >> S20)) & M32
        x3 = (x3 + x4) & M32
        x14 ^= x3
        x14 = ((x14 << S8) | (x14 >> S24)) & M32
        x9 = (x9 + x14) & M32
        x4 ^= x9
        x4 = ((x4 << S7) | (x4 >> S25)) & M32
    out64[off + 0] = ((x0 + s0) & M32) | (((x1 + s1) & M32) << S32)
    out64[off + 1] = ((x2 + s2) & M32) | (((x3 + s3) & M32) << S32)
    out64[off + 2] = ((x4 + s4) & M32) | (((x5 + s5) & M32) << S32)
    out64[off + 3] = ((x6 + s6) & M32) | (((x7 + s7) & M32) << S32)
    out64[off + 4] = ((x8 + s8) & M32) | (((x9 + s9) & M32) << S32)
    out64[off + 5] = ((x10 + s10) & M32) | (((x11 + s11) & M32) << S32)
    out64[off + 6] = ((x12 + s12) & M32) | (((x13 + s13) & M32) << S32)
    out64[off + 7] = ((x14 + s14) & M32) | (((x15 + s15) & M32) << S32)


@nb.njit(**KERNEL)
def chacha_words(key, nonce, counter, out64):
    """Fill ``out64`` (uint64, length a multiple of 8) with blocks from ``counter`` on."""
    for b in range(out64.shape[0] // 8):
        block_into(key, nonce, counter + b, out64, 8 * b)


#: the C function refills call (csrc/chacha20.c); registered by dpfast._native
C_BLOCKS_SYMBOL = "dpf_chacha20_blocks"


@intrinsic
def _c_blocks(typingctx, key, nonce, counter, out64):
    """Call ``dpf_chacha20_blocks(key, nonce, counter, len(out64) / 8, out64)`` by its
    symbol name (resolved when the kernel is linked: the cached machine code holds no
    address)."""
    sig = types.void(key, nonce, counter, out64)

    def codegen(context, builder, signature, args):
        a_key, a_nonce, a_counter, a_out = args
        t_key, t_nonce, t_counter, t_out = signature.args
        i32p = ir.IntType(32).as_pointer()
        key_p = builder.bitcast(context.make_array(t_key)(context, builder, a_key).data, i32p)
        nonce_p = builder.bitcast(
            context.make_array(t_nonce)(context, builder, a_nonce).data, i32p)
        out_a = context.make_array(t_out)(context, builder, a_out)
        out_p = builder.bitcast(out_a.data, i32p)
        nblocks = builder.udiv(builder.extract_value(out_a.shape, 0),
                               ir.Constant(ir.IntType(64), 8))
        ctr = builder.trunc(context.cast(builder, a_counter, t_counter, types.int64),
                            ir.IntType(32))
        fnty = ir.FunctionType(ir.VoidType(), [i32p, i32p, ir.IntType(32), ir.IntType(64),
                                               i32p])
        fn = cgutils.get_or_insert_function(builder.module, fnty, C_BLOCKS_SYMBOL)
        builder.call(fn, [key_p, nonce_p, ctr, nblocks, out_p])
        return context.get_dummy_value()

    return sig, codegen


#: the C function :func:`first_blocks` calls (one block each of many streams)
C_STREAMS_SYMBOL = "dpf_chacha20_streams"


@intrinsic
def _c_streams(typingctx, key, nonces, counters, out64):
    """Call ``dpf_chacha20_streams(key, nonces, counters, len(counters), 1, out64)`` by its
    symbol name: block ``counters[i]`` of stream ``nonces[i]`` (three uint32 words) into
    ``out64[i]`` (eight uint64 words), 16 streams per SIMD call."""
    sig = types.void(key, nonces, counters, out64)

    def codegen(context, builder, signature, args):
        i32p = ir.IntType(32).as_pointer()
        ptrs = []
        for a, t in zip(args, signature.args):
            arr = context.make_array(t)(context, builder, a)
            ptrs.append(builder.bitcast(arr.data, i32p))
        ctr_a = context.make_array(signature.args[2])(context, builder, args[2])
        nstreams = builder.extract_value(ctr_a.shape, 0)
        fnty = ir.FunctionType(ir.VoidType(), [i32p, i32p, i32p, ir.IntType(64),
                                               ir.IntType(64), i32p])
        fn = cgutils.get_or_insert_function(builder.module, fnty, C_STREAMS_SYMBOL)
        builder.call(fn, [ptrs[0], ptrs[1], ptrs[2], nstreams,
                          ir.Constant(ir.IntType(64), 1), ptrs[3]])
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(**KERNEL)
def first_blocks(key, nonces, counters, out64, m):
    """Block ``counters[i]`` of stream ``nonces[i]`` into ``out64[i]`` for ``i < m``
    (C-contiguous ``(>= m, 3)`` uint32 nonces, ``(>= m,)`` uint32 counters, ``(>= m, 8)``
    uint64 out): what :func:`refill` computes for one stream at a time."""
    if m > 0:
        _c_streams(key, nonces[:m], counters[:m], out64[:m])


@nb.njit(**KERNEL)
def refill(buf, st, key, nonce):
    """Refill a chunk's buffer from its stream, continuing after the last block used
    (on the stream's next extension when its block counter is used up), with the C
    ChaCha20 (16-lane AVX-512 where the CPU has it).  ``st`` needs columns ST_POS,
    ST_BLOCK and ST_WRAP only."""
    nblocks = buf.shape[0] // 8
    counter = st[1]
    if counter + nblocks > 4294967296:
        # the 32-bit counter would wrap: continue on the next extension stream of this id
        # (id + k 2^64: allocators hand out ids < 2^64 only), so no block is ever reused
        if nonce[2] == np.uint32(0xFFFFFFFF):
            st[2] = 1  # 2^64 blocks used: unreachable; the caller raises
        else:
            nonce[2] += np.uint32(1)
        counter = 0
    _c_blocks(key, nonce, counter, buf)
    st[0] = 0
    st[1] = counter + nblocks


@nb.njit(cache=True, _nrt=False, inline="always")
def next_u64(buf, pos, st, key, nonce):
    """(next unused 64-bit word of the chunk's keystream, new position).

    Kernels keep the position in a local variable (a register) and store it back to
    ``st[0]`` when they leave the chunk.
    """
    if pos >= buf.shape[0]:
        refill(buf, st, key, nonce)
        pos = 0
    return buf[pos], pos + 1


@nb.njit(**KERNEL)
def refills(buf, st, key, nonce, n):
    """Refill the buffer as a kernel does when it runs dry, until ``n`` words were made;
    returns the XOR of the words (the benchmark of the refill path, ``dpfast.perf``)."""
    acc = np.uint64(0)
    done = 0
    while done < n:
        refill(buf, st, key, nonce)
        for j in range(buf.shape[0]):
            acc ^= buf[j]
        done += buf.shape[0]
    return acc
