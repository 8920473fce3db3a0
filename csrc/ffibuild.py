"""cffi out-of-line API-mode build of dpfast's C kernels (``dpfast._cffi``).

Paths are relative to the project root (setuptools runs builds from there), so the
sdist and wheel builds work from any checkout.  Only portable flags: SIMD variants are
compiled per function with ``target`` attributes and chosen at run time.
"""

from __future__ import annotations

import pathlib

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = ["csrc/chacha20.c", "csrc/bitgen.c"]

ffibuilder = FFI()
ffibuilder.cdef(
    """
    void dpf_chacha20_blocks(const uint32_t *key, const uint32_t *nonce, uint32_t counter,
                             uint64_t nblocks, uint32_t *out);
    void dpf_chacha20_streams(const uint32_t *key, const uint32_t *nonces,
                              const uint32_t *counters, uint64_t nstreams, uint64_t nblocks,
                              uint32_t *out);
    void dpf_chacha20_keystream(const uint8_t *key, const uint8_t *nonce, uint32_t counter,
                                uint8_t *out, uint64_t nbytes);
    int dpf_chacha20_simd_level(void);
    int dpf_chacha20_blocks_impl(int impl, const uint32_t *key, const uint32_t *nonce,
                                 uint32_t counter, uint64_t nblocks, uint32_t *out);

    #define DPF_BITGEN_BLOCKS 8
    typedef struct {
        uint32_t key[8];
        uint32_t nonce[3];
        uint64_t counter;
        uint64_t stream_index;
        uint32_t buf[128];
        uint32_t pos;
    } dpf_bitgen_state;
    typedef struct {
        void *state;
        uint64_t (*next_uint64)(void *st);
        uint32_t (*next_uint32)(void *st);
        double (*next_double)(void *st);
        uint64_t (*next_raw)(void *st);
    } dpf_bitgen_t;
    uint64_t dpf_bitgen_next_uint64(void *st);
    void dpf_bitgen_init(dpf_bitgen_t *bg, dpf_bitgen_state *st);
    void dpf_bitgen_fill(dpf_bitgen_state *st, uint64_t *out, uint64_t n);
    """
)
ffibuilder.set_source(
    "dpfast._cffi",
    '#include "dpfast.h"',
    sources=SOURCES,
    include_dirs=["csrc"],
    extra_compile_args=["-O3", "-std=gnu99", "-fno-strict-aliasing"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
