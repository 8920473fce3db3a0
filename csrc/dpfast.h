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

#endif
