/* A numpy-compatible bit generator (bitgen_t) over the ChaCha20 keystream.
 *
 * The state owns one stream id below 2^64 reserved by Python, and that id's extension
 * streams id + k 2^64 (k < 2^32: the nonce's top word), which no allocator hands out.
 * When the 32-bit block counter of one stream is used up the generator moves to the next
 * extension, so by construction it never leaves its own streams and never repeats
 * keystream.  After 2^64 blocks (2^70 bytes) there is no fresh keystream left: abort
 * rather than repeat. */
#include <stdio.h>
#include <stdlib.h>

#include "dpfast.h"

static void refill(dpf_bitgen_state *s) {
    if (s->counter + DPF_BITGEN_BLOCKS > ((uint64_t)1 << 32)) {
        if (s->stream_index + 1 >= DPF_STREAM_EXTENSIONS) {
            fputs("dpfast: ChaCha20 bit generator exhausted its 2^70 bytes\n", stderr);
            abort();
        }
        s->counter = 0;
        s->stream_index++;
        s->nonce[2] = (uint32_t)s->stream_index;
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

/* n words, exactly as n calls of dpf_bitgen_next_uint64 give them.  The buffered words go
 * one at a time; then, while whole refills are wanted, their blocks are written straight
 * into out (a refill's words are its blocks' 32-bit words in pairs, little end first: the
 * blocks' own bytes on a little-endian machine), many refills per call of the block
 * function, up to the end of the stream's block counter; a refill that moves to the next
 * extension, and the words after the last whole refill, go one at a time again. */
void dpf_bitgen_fill(dpf_bitgen_state *st, uint64_t *out, uint64_t n) {
    const uint32_t end = 16 * DPF_BITGEN_BLOCKS;   /* buffer size, 32-bit words */
    const uint64_t per = 8 * DPF_BITGEN_BLOCKS;    /* 64-bit words per refill */
    uint64_t i = 0;
    while (i < n && st->pos + 2 <= end) out[i++] = dpf_bitgen_next_uint64(st);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n - i >= per) {
        /* the buffer holds less than one word: the next draw refills */
        uint64_t left = (((uint64_t)1 << 32) - st->counter) / DPF_BITGEN_BLOCKS;
        uint64_t m = (n - i) / per < left ? (n - i) / per : left;
        if (m == 0) { /* this refill moves to the next extension stream */
            for (uint64_t k = 0; k < per; k++) out[i++] = dpf_bitgen_next_uint64(st);
            continue;
        }
        dpf_chacha20_blocks(st->key, st->nonce, (uint32_t)st->counter, m * DPF_BITGEN_BLOCKS,
                            (uint32_t *)(void *)(out + i));
        st->counter += m * DPF_BITGEN_BLOCKS;
        st->pos = end;
        i += m * per;
    }
#endif
    for (; i < n; i++) out[i] = dpf_bitgen_next_uint64(st);
}
