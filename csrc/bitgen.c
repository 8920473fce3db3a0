/* A numpy-compatible bit generator (bitgen_t) over the ChaCha20 keystream.
 *
 * The state owns a range of NSTREAMS consecutive stream ids reserved by Python; when
 * the 32-bit block counter of one stream is used up the generator moves to the next id
 * of its range, so keystream is never repeated. */
#include "dpfast.h"

static void refill(dpf_bitgen_state *s) {
    if (s->counter + DPF_BITGEN_BLOCKS > ((uint64_t)1 << 32)) {
        /* next stream id of the reserved range: 96-bit little-endian increment */
        s->counter = 0;
        s->stream_index++;
        for (int i = 0; i < 3; i++) {
            if (++s->nonce[i] != 0) break;
        }
    }
    dpf_chacha20_blocks(s->key, s->nonce, (uint32_t)s->counter, DPF_BITGEN_BLOCKS, s->buf);
    s->counter += DPF_BITGEN_BLOCKS;
    s->pos = 0;
}

uint64_t dpf_bitgen_next_uint64(void *st) {
    dpf_bitgen_state *s = (dpf_bitgen_state *)st;
    if (s->pos + 2 > 16 * DPF_BITGEN_BLOCKS) refill(s);
    uint64_t lo = s->buf[s->pos], hi = s->buf[s->pos + 1];
    s->pos += 2;
    return lo | (hi << 32);
}

uint32_t dpf_bitgen_next_uint32(void *st) {
    dpf_bitgen_state *s = (dpf_bitgen_state *)st;
    if (s->pos + 1 > 16 * DPF_BITGEN_BLOCKS) refill(s);
    return s->buf[s->pos++];
}

double dpf_bitgen_next_double(void *st) {
    return (double)(dpf_bitgen_next_uint64(st) >> 11) * (1.0 / 9007199254740992.0);
}

void dpf_bitgen_init(dpf_bitgen_t *bg, dpf_bitgen_state *st) {
    st->pos = 16 * DPF_BITGEN_BLOCKS; /* empty: the first draw refills */
    bg->state = st;
    bg->next_uint64 = dpf_bitgen_next_uint64;
    bg->next_uint32 = dpf_bitgen_next_uint32;
    bg->next_double = dpf_bitgen_next_double;
    bg->next_raw = dpf_bitgen_next_uint64;
}

void dpf_bitgen_fill(dpf_bitgen_state *st, uint64_t *out, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) out[i] = dpf_bitgen_next_uint64(st);
}
