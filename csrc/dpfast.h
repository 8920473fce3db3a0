/* dpfast C kernels: C99, no Python.h.  Symbols are dpf_<noun>_<verb>. */
#ifndef DPFAST_H
#define DPFAST_H

#include <stddef.h>
#include <stdint.h>

/* ChaCha20 (RFC 8439) keystream blocks.
 * key: 8 little-endian words, nonce: 3 little-endian words (RFC 8439 96-bit nonce),
 * counter: block counter of the first block.  Writes nblocks*16 words to out.
 * The caller guarantees counter + nblocks <= 2^32 (the counter never wraps). */
void dpf_chacha20_blocks(const uint32_t *key, const uint32_t *nonce, uint32_t counter,
                         uint64_t nblocks, uint32_t *out);

/* Same, for many streams at once: stream i uses nonces[3*i..3*i+2] and counters[i],
 * and writes nblocks blocks to out + i*nblocks*16.  With nblocks == 1, 16 streams are
 * computed together (one SIMD lane each); the numba kernels call it by name. */
void dpf_chacha20_streams(const uint32_t *key, const uint32_t *nonces, const uint32_t *counters,
                          uint64_t nstreams, uint64_t nblocks, uint32_t *out);

/* Byte keystream starting at block `counter`; nbytes need not be a multiple of 64. */
void dpf_chacha20_keystream(const uint8_t *key, const uint8_t *nonce, uint32_t counter,
                            uint8_t *out, uint64_t nbytes);

/* 3 when the 16-lane AVX-512F path is used, 2 for the 8-lane AVX2 path, 1 for the
 * portable 8-lane vector path. */
int dpf_chacha20_simd_level(void);

/* One implementation by number (0 scalar, 1 portable 8-lane, 2 AVX2 8-lane, 3 portable
 * 16-lane, 4 AVX-512F 16-lane), for equality tests; -1 if this CPU cannot run it. */
int dpf_chacha20_blocks_impl(int impl, const uint32_t *key, const uint32_t *nonce,
                             uint32_t counter, uint64_t nblocks, uint32_t *out);

/* Keyed BLAKE2b (RFC 7693, blake2b.c) of n messages: out[i*outlen .. +outlen) is
 * BLAKE2b(key, tag || buf[off[i] .. off[i+1])) with digest length outlen.
 * keylen in [1, 64], outlen in [1, 64], off[0..n] nondecreasing. */
void dpf_blake2b_keyed_many(const uint8_t *key, uint64_t keylen, uint8_t tag,
                            const uint8_t *buf, const int64_t *off, uint64_t n,
                            uint8_t *out, uint64_t outlen);

/* numpy bit generator state (see bitgen.c).  counter is the block counter of the next
 * refill, in [0, 2^32]; stream_index the extension in use (nonce[2]); pos indexes buf
 * (32-bit words). */
#define DPF_BITGEN_BLOCKS 8
/* extension streams per stream id: id + k 2^64 for k < 2^32 (see bitgen.c) */
#define DPF_STREAM_EXTENSIONS 4294967296ULL
typedef struct {
    uint32_t key[8];
    uint32_t nonce[3];
    uint64_t counter;
    uint64_t stream_index;
    uint32_t buf[16 * DPF_BITGEN_BLOCKS];
    uint32_t pos;
} dpf_bitgen_state;

/* Same layout as numpy's bitgen_t (numpy/random/bitgen.h). */
typedef struct {
    void *state;
    uint64_t (*next_uint64)(void *st);
    uint32_t (*next_uint32)(void *st);
    double (*next_double)(void *st);
    uint64_t (*next_raw)(void *st);
} dpf_bitgen_t;

uint64_t dpf_bitgen_next_uint64(void *st);
uint32_t dpf_bitgen_next_uint32(void *st);
double dpf_bitgen_next_double(void *st);
void dpf_bitgen_init(dpf_bitgen_t *bg, dpf_bitgen_state *st);
void dpf_bitgen_fill(dpf_bitgen_state *st, uint64_t *out, uint64_t n);

/* The envelope-table kernel's common case (table.c), called by name from the numba
 * kernel: proposals decided by the squeeze, from b[pos] (and the saved low half hv of
 * word pos - 1 first when hh is 1) while pos < n, written to cells i.. < hi in `mode`
 * (0 write int64 out, 1 add x to it, 2 subtract from out, 3 the grid store of a float
 * `fx` into `fout` in format `fmt`).  A table with a direct table `direct` (2^dbits
 * entries) has the half-word layout: a proposal takes one 32-bit half where the direct
 * table decides it, two else; dbits 0: one word a proposal, the step loop.  Returns r
 * (1 stopped before a proposal it leaves to the general loop, or the words ran out; 0
 * overflow of cell i; -1 grid value too large) and res[0..7] = pos, i, v, sg, item, ux,
 * hh, hv.  impl 0: the best loop for this CPU; 1 every decision by the step (tests);
 * 2 the direct table's portable loop (tests). */
#define DPF_TABLE_F64 1
#define DPF_TABLE_F32 2
#define DPF_TABLE_F64_F32 3
int64_t dpf_table_fast(int64_t impl, int64_t law, const uint64_t *b, int64_t n, int64_t pos,
                       int64_t hh, uint64_t hv, int64_t i, int64_t hi, const int64_t *x,
                       int64_t *out, const void *fx, void *fout, int64_t fmt, int64_t mode,
                       double ginv, double g, double sat, const uint64_t *pack,
                       const uint64_t *thresh, const uint64_t *sel, const uint64_t *trm1,
                       const double *flo, const double *fhi, int64_t nbins, int64_t p,
                       int64_t cbits, int64_t vb, int64_t ubits, double coef,
                       const uint64_t *direct, int64_t dbits, int64_t *res);

/* 1 when dpf_table_fast runs the direct table four words at a time (AVX2), else 0. */
int dpf_table_simd(void);

/* The SIMD cap set by the DPFAST_SIMD environment variable: 3 (none), 2 ("avx2": no
 * AVX-512), 1 ("portable": no x86 vector extensions). */
int dpf_simd_cap(void);

#endif
