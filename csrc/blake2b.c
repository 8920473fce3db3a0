/* Keyed BLAKE2b (RFC 7693) of many short messages: the per-key stream ids of a release.
 *
 * Message i is the one-byte tag followed by buf[off[i] .. off[i+1]); its digest is
 * BLAKE2b(key, tag || message) truncated to outlen bytes (the parameter block says
 * outlen, so this equals hashlib.blake2b(tag + message, key=key, digest_size=outlen)).
 * Plain C99, scalar (64-bit words): no SIMD variants, nothing chosen at run time.
 */
#include <string.h>

#include "dpfast.h"

static const uint64_t IV[8] = {
    0x6A09E667F3BCC908ULL, 0xBB67AE8584CAA73BULL, 0x3C6EF372FE94F82BULL,
    0xA54FF53A5F1D36F1ULL, 0x510E527FADE682D1ULL, 0x9B05688C2B3E6C1FULL,
    0x1F83D9ABFB41BD6BULL, 0x5BE0CD19137E2179ULL};

static const uint8_t SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

#define ROTR64(x, n) (((x) >> (n)) | ((x) << (64 - (n))))
#define G(a, b, c, d, x, y)             \
    a = a + b + (x); d = ROTR64(d ^ a, 32); \
    c = c + d; b = ROTR64(b ^ c, 24);       \
    a = a + b + (y); d = ROTR64(d ^ a, 16); \
    c = c + d; b = ROTR64(b ^ c, 63);

static uint64_t load64(const uint8_t *p) { /* little-endian, any alignment */
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* One compression of the 128-byte block blk, t bytes hashed so far (incl. this block). */
static void compress(uint64_t h[8], const uint8_t blk[128], uint64_t t, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64(blk + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = IV[i];
    }
    v[12] ^= t; /* messages here are far below 2^64 bytes: the high counter word is 0 */
    if (last) v[14] = ~v[14];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = SIGMA[r];
        G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

void dpf_blake2b_keyed_many(const uint8_t *key, uint64_t keylen, uint8_t tag,
                            const uint8_t *buf, const int64_t *off, uint64_t n,
                            uint8_t *out, uint64_t outlen) {
    uint64_t h0[8], h[8];
    uint8_t blk[128];
    /* the state after the key block (not the last block: every message has its tag) */
    memcpy(h0, IV, sizeof h0);
    h0[0] ^= 0x01010000ULL ^ (keylen << 8) ^ outlen;
    memset(blk, 0, sizeof blk);
    memcpy(blk, key, keylen);
    compress(h0, blk, 128, 0);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *msg = buf + off[i];
        uint64_t mlen = (uint64_t)(off[i + 1] - off[i]) + 1; /* with the tag */
        uint64_t pos = 0, t = 128;
        memcpy(h, h0, sizeof h);
        for (;;) {
            uint64_t take = mlen - pos < 128 ? mlen - pos : 128;
            memset(blk, 0, sizeof blk);
            if (pos == 0) {
                blk[0] = tag;
                memcpy(blk + 1, msg, take - 1);
            } else {
                memcpy(blk, msg + pos - 1, take);
            }
            pos += take;
            t += take;
            compress(h, blk, t, pos >= mlen);
            if (pos >= mlen) break;
        }
        uint8_t *o = out + i * outlen;
        for (uint64_t j = 0; j < outlen; j++) o[j] = (uint8_t)(h[j >> 3] >> (8 * (j & 7)));
    }
}
