/* The envelope-table kernel's AVX2 loops (docs/design.md), chosen at run time (no -march
 * flags): the step loop's grid stores four at a time (dpf_table_scalar_grid), the wide
 * bins four words at a time (dpf_table_wides: per-column records with each item's
 * acceptance and rejection lines), and the direct table four half-words at a time
 * (run_avx2, behind dpf_table_fast_avx2); the last two also built with AVX-512
 * (dpf_table_wides512, dpf_table_fast_avx512: eight words, or eight halves, a group).
 * Each takes exactly the decisions of the step (csrc/table_core.h) on the same words. */
#include "table_core.h"

#ifdef DPF_TABLE_AVX2
/* The grid store of four cells i.. (the first `cnt`, by `first`) from values v with
 * |v| < 2^51, as store() writes each: x / g (or x * ginv) rounded to an integer, times g,
 * plus v g, clamped to [-sat, sat] as numba's min(max(r, -sat), sat) (a NaN passes). */
static inline __attribute__((always_inline, target("avx2"))) void grid_store4_by(
    const io_t *io, int64_t fmt, int64_t i, __m256i v, int cnt, __m256i first, int mul) {
    const __m256d gstep = _mm256_set1_pd(io->g);
    const __m256d sat = _mm256_set1_pd(io->sat), nsat = _mm256_set1_pd(-io->sat);
    __m256d xd = fmt == DPF_TABLE_F32 ? _mm256_cvtps_pd(_mm_loadu_ps((const float *)io->fx + i))
                                      : _mm256_loadu_pd((const double *)io->fx + i);
    __m256d qd = mul ? _mm256_mul_pd(xd, _mm256_set1_pd(io->ginv)) : _mm256_div_pd(xd, gstep);
    qd = _mm256_round_pd(qd, _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
    /* v converts exactly through the 2^52 + 2^51 bias */
    __m256d vd = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_add_epi64(v, _mm256_set1_epi64x(0x4338000000000000ll))),
        _mm256_set1_pd(0x1.8p52));
    __m256d r = _mm256_add_pd(_mm256_mul_pd(qd, gstep), _mm256_mul_pd(vd, gstep));
    r = _mm256_min_pd(sat, _mm256_max_pd(nsat, r)); /* as the scalar store */
    if (fmt == DPF_TABLE_F64 && cnt == 4)
        _mm256_storeu_pd((double *)io->fout + i, r);
    else if (fmt == DPF_TABLE_F64)
        _mm256_maskstore_pd((double *)io->fout + i, first, r);
    else if (cnt == 4)
        _mm_storeu_ps((float *)io->fout + i, _mm256_cvtpd_ps(r));
    else
        _mm_maskstore_ps((float *)io->fout + i,
                         _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                             first, _mm256_set_epi32(7, 7, 7, 7, 6, 4, 2, 0))),
                         _mm256_cvtpd_ps(r));
}

/* grid_store4_by with x / g as x (1/g) where 1/g is a normal double (ginv != 0). */
static inline __attribute__((always_inline, target("avx2"))) void grid_store4(
    const io_t *io, int64_t fmt, int64_t i, __m256i v, int cnt, __m256i first) {
    grid_store4_by(io, fmt, i, v, cnt, first, io->ginv != 0.0);
}

/* The step loop with its grid stores four at a time (wide bins on an AVX2 CPU): the
 * accepted values of up to GRID_BATCH proposals are kept with the position after each,
 * then written in cell order; a value the vector store cannot convert goes through
 * store(), and a failing store returns the state after that proposal, as the step loop
 * would. */
#define GRID_BATCH 64
DPF_HIDDEN __attribute__((noinline, target("avx2"))) int64_t dpf_table_scalar_grid(
    const tab_t *tp, const io_t *iop, int64_t fmt, const uint64_t *b, int64_t pos, int64_t i,
    int64_t lim, int64_t *res) {
    /* local copies: the stores cannot alias them, so nothing is reloaded per word */
    const tab_t tl = *tp;
    const io_t il = *iop;
    const tab_t *t = &tl;
    const io_t *io = &il;
    int64_t vs[GRID_BATCH] __attribute__((aligned(32)));
    int64_t ps[GRID_BATCH], sgs[GRID_BATCH], its[GRID_BATCH];
    uint64_t uxs[GRID_BATCH];
    const __m256i big = _mm256_set1_epi64x((1ll << 51) - 1);
    for (;;) {
        int cnt = 0, stop = 0;
        while (cnt < GRID_BATCH && pos < lim) {
            int s = step(t, b, &pos, lim, &vs[cnt], &sgs[cnt], &its[cnt], &uxs[cnt]);
            if (s == STEP_STOP) {
                stop = 1;
                break;
            }
            if (s == STEP_ACCEPT) ps[cnt++] = pos;
        }
        int k = 0;
        for (; k + 4 <= cnt; k += 4) {
            __m256i v = _mm256_load_si256((const __m256i *)(vs + k));
            /* |v| < 2^51 in every lane (else store() for the rest) */
            __m256i av = _mm256_sub_epi64(_mm256_setzero_si256(), v);
            av = _mm256_or_si256(_mm256_cmpgt_epi64(v, big), _mm256_cmpgt_epi64(av, big));
            if (_mm256_movemask_pd(_mm256_castsi256_pd(av))) break;
            grid_store4(io, fmt, i + k, v, 4, _mm256_setzero_si256());
        }
        for (; k < cnt; k++) {
            int r = store(io, MODE_GRID, fmt, i + k, vs[k]);
            if (r != 1) return finish(res, ps[k], i + k, r, vs[k], sgs[k], its[k], uxs[k]);
        }
        i += cnt;
        if (stop || pos >= lim) return finish(res, pos, i, 1, 0, 0, 0, 0);
    }
}

/* vpermd indices that move the 64-bit lanes set in a 4-bit mask to the front, in order */
static const int32_t COMPACT[16][8] __attribute__((aligned(32))) = {
    {0, 1, 2, 3, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7},
    {2, 3, 0, 1, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7},
    {4, 5, 0, 1, 2, 3, 6, 7},
    {0, 1, 4, 5, 2, 3, 6, 7},
    {2, 3, 4, 5, 0, 1, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7},
    {6, 7, 0, 1, 2, 3, 4, 5},
    {0, 1, 6, 7, 2, 3, 4, 5},
    {2, 3, 6, 7, 0, 1, 4, 5},
    {0, 1, 2, 3, 6, 7, 4, 5},
    {4, 5, 6, 7, 0, 1, 2, 3},
    {0, 1, 4, 5, 6, 7, 2, 3},
    {2, 3, 4, 5, 6, 7, 0, 1},
    {0, 1, 2, 3, 4, 5, 6, 7}};

/* The wide loop's constants (run_wide), as vectors.  Shift counts are vectors for the
 * per-lane shifts (vpsrlvq: one micro-op; a shift by an xmm count is two on AMD cores). */
typedef struct {
    const uint64_t *rec;
    uint64_t cshift;
    __m256i vsh, ucut, osh, hsh, qs, psh, c21, c42, c32;
    __m256i vmk, m21, m32, hmask, umask, omask, sbit, zero;
} wide_t;

static inline __attribute__((always_inline, target("avx2"))) void wide_init(wide_t *c,
                                                                           const tab_t *t) {
    c->rec = t->rec;
    c->cshift = t->cshift;
    /* the records' trailer (KernelTable.column_records): the lines' qs and q */
    const uint64_t trailer = t->rec[4ull << (64 - t->cshift)];
    const uint64_t q = (trailer >> 8) & 0xFF;
    c->vsh = _mm256_set1_epi64x((long long)t->vshift);
    c->ucut = _mm256_set1_epi64x((long long)t->ucut);
    c->osh = _mm256_set1_epi64x((long long)t->oshift);
    c->hsh = _mm256_set1_epi64x((long long)(t->oshift + (uint64_t)t->p - q));
    c->qs = _mm256_set1_epi64x((long long)(trailer & 0xFF));
    c->psh = _mm256_set1_epi64x((long long)t->p);
    c->c21 = _mm256_set1_epi64x(21);
    c->c42 = _mm256_set1_epi64x(42);
    c->c32 = _mm256_set1_epi64x(32);
    c->vmk = _mm256_set1_epi64x((long long)t->vmask);
    c->m21 = _mm256_set1_epi64x((1ll << 21) - 1);
    c->m32 = _mm256_set1_epi64x(0xFFFFFFFFll);
    c->hmask = _mm256_set1_epi64x((long long)((1ull << q) - 1u));
    c->umask = _mm256_set1_epi64x((long long)t->umask);
    c->omask = _mm256_set1_epi64x((long long)t->omask);
    c->sbit = _mm256_set1_epi64x((long long)(1ull << t->sshift));
    c->zero = _mm256_setzero_si256();
}

/* Words b[pos..pos+3] of a one-word layout without a direct table, each as the step
 * decides it as a proposal of its own.  Returns how many of them, from the first, are
 * decided here -- every proposal but those of the tail item (its column's records name it
 * as the alias too: that column's threshold is the one with bits below its top ones, where
 * a tie reads the next word; every other tie is the alias) and those between a bin's lines
 * -- with the accepted ones' values among them written in order to dst (four words
 * written: the ones past them are not values) and their count to *kept.  Padding and (negative, 0) reject; a bin's
 * lines (KernelTable.wide_lines) on U's top known bits u and the offset's top bits h accept (u
 * below A - (h S >> qs)) or reject (u at or above R - (h S >> qs)), decisions the step's
 * and the general loop's certificates take on the same bits.  The four alias columns'
 * 32-byte records (KernelTable.column_records) by one load each, transposed into four vectors;
 * the rest as vectors, without a branch. */
static inline __attribute__((always_inline, target("avx2,bmi2,popcnt"))) int wide4(
    const wide_t *c, const uint64_t *b, int64_t pos, int64_t *dst, int *kept) {
    const uint64_t *rec = c->rec;
    const uint64_t cs = c->cshift;
    const __m256i r0 = _mm256_loadu_si256((const __m256i *)(rec + 4 * (b[pos] >> cs)));
    const __m256i r1 = _mm256_loadu_si256((const __m256i *)(rec + 4 * (b[pos + 1] >> cs)));
    const __m256i r2 = _mm256_loadu_si256((const __m256i *)(rec + 4 * (b[pos + 2] >> cs)));
    const __m256i r3 = _mm256_loadu_si256((const __m256i *)(rec + 4 * (b[pos + 3] >> cs)));
    const __m256i t0 = _mm256_unpacklo_epi64(r0, r1), t1 = _mm256_unpackhi_epi64(r0, r1);
    const __m256i t2 = _mm256_unpacklo_epi64(r2, r3), t3 = _mm256_unpackhi_epi64(r2, r3);
    const __m256i e0 = _mm256_permute2x128_si256(t0, t2, 0x20);   /* th | own | alias */
    const __m256i lown = _mm256_permute2x128_si256(t1, t3, 0x20); /* own item's S | A */
    const __m256i lali = _mm256_permute2x128_si256(t0, t2, 0x31); /* alias's S | A */
    const __m256i rr = _mm256_permute2x128_si256(t1, t3, 0x31);   /* R_own | R_alias */
    const __m256i w = _mm256_loadu_si256((const __m256i *)(b + pos));
    const __m256i vh = _mm256_and_si256(_mm256_srlv_epi64(w, c->vsh), c->vmk);
    const __m256i th = _mm256_and_si256(e0, c->m21);
    /* v's top bits below the threshold's: the column's own item (all < 2^21) */
    const __m256i own = _mm256_cmpgt_epi64(th, vh);
    const __m256i it =
        _mm256_and_si256(_mm256_srlv_epi64(e0, _mm256_blendv_epi8(c->c42, c->c21, own)), c->m21);
    const __m256i line = _mm256_blendv_epi8(lali, lown, own);
    const __m256i rl =
        _mm256_and_si256(_mm256_srlv_epi64(rr, _mm256_andnot_si256(own, c->c32)), c->m32);
    const __m256i sgm = _mm256_cmpeq_epi64(_mm256_and_si256(w, c->sbit), c->sbit);
    const __m256i off = _mm256_and_si256(_mm256_srlv_epi64(w, c->osh), c->omask);
    const __m256i h = _mm256_and_si256(_mm256_srlv_epi64(w, c->hsh), c->hmask);
    const __m256i u = _mm256_srlv_epi64(_mm256_and_si256(w, c->umask), c->ucut);
    const __m256i m = _mm256_add_epi64(_mm256_sllv_epi64(it, c->psh), off);
    /* h S: a 32 x 32-bit product (h < 2^16, S < 2^32 the line word's low half) */
    const __m256i drop = _mm256_srlv_epi64(_mm256_mul_epu32(h, line), c->qs);
    const __m256i ta = _mm256_sub_epi64(_mm256_srli_epi64(line, 32), drop);
    const __m256i tr = _mm256_sub_epi64(rl, drop);
    /* U's top 31 known bits and the lines are < 2^33: signed comparisons.  The tail's
     * lines decide nothing, the padding's reject; (negative, 0) (m = 0: a bin's item)
     * rejects */
    const __m256i negz = _mm256_and_si256(_mm256_cmpeq_epi64(m, c->zero), sgm);
    const __m256i acc = _mm256_andnot_si256(negz, _mm256_cmpgt_epi64(ta, u));
    const __m256i rej =
        _mm256_or_si256(negz, _mm256_cmpeq_epi64(_mm256_cmpgt_epi64(tr, u), c->zero));
    const int decided = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_or_si256(acc, rej)));
    const int n = decided == 15 ? 4 : __builtin_ctz(~(unsigned)decided & 15u);
    const int k = _mm256_movemask_pd(_mm256_castsi256_pd(acc)) & ((1 << n) - 1);
    /* -m if the sign bit is set, else m; the accepted ones to the front */
    const __m256i val = _mm256_sub_epi64(_mm256_xor_si256(m, sgm), sgm);
    _mm256_storeu_si256((__m256i *)dst, _mm256_permutevar8x32_epi32(
                                            val, _mm256_load_si256((const __m256i *)COMPACT[k])));
    *kept = __builtin_popcount((unsigned)k);
    return n;
}

/* Four values to cells i..i+3 (run_wide): 0 where an in-place addition overflows (nothing
 * written), else 1. */
static inline __attribute__((always_inline, target("avx2"))) int store4(const io_t *io,
                                                                        int64_t mode,
                                                                        int64_t fmt, int64_t i,
                                                                        __m256i v) {
    if (mode == MODE_GRID) { /* the wide loop's grids have ginv != 0 (run_loop) */
        grid_store4_by(io, fmt, i, v, 4, _mm256_setzero_si256(), 1);
    } else if (mode == MODE_WRITE) {
        _mm256_storeu_si256((__m256i *)(io->out + i), v);
    } else if (mode == MODE_SUB) {
        _mm256_storeu_si256(
            (__m256i *)(io->out + i),
            _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(io->out + i)), v));
    } else {
        const __m256i xi = _mm256_loadu_si256((const __m256i *)(io->x + i));
        const __m256i sm = _mm256_add_epi64(xi, v);
        const __m256i ovf = _mm256_and_si256(_mm256_xor_si256(xi, sm), _mm256_xor_si256(v, sm));
        if (__builtin_expect(_mm256_movemask_pd(_mm256_castsi256_pd(ovf)) != 0, 0)) return 0;
        _mm256_storeu_si256((__m256i *)(io->out + i), sm);
    }
    return 1;
}

/* A batch whose values from the k-th on were not all written (an overflow of an in-place
 * addition): its proposals decided again from its first word `start` by step(), without
 * stores, up to the k-th accepted one, then scalar_steps from there (cell i + k) writes on
 * and returns the failing store's state, as the step loop would. */
static inline __attribute__((always_inline)) int64_t redo(const tab_t *t, const io_t *io,
                                                          int64_t mode, int64_t fmt,
                                                          const uint64_t *b, int64_t start,
                                                          int64_t lim, int64_t i, int k,
                                                          int64_t *res) {
    int64_t p2 = start;
    for (int got = 0; got < k;) {
        int64_t v = 0, s2 = 0, item = 0;
        uint64_t ux = 0;
        if (step(t, b, &p2, lim, &v, &s2, &item, &ux) == STEP_ACCEPT) got++;
    }
    int64_t ii = i + k;
    const int64_t r = scalar_steps(t, io, mode, fmt, b, &p2, &ii, lim, lim, res);
    if (r != GO_ON) return r - 2;
    return finish(res, p2, ii, 1, 0, 0, 0, 0);
}

/* Four values from src to cells i..i+3 (store4): 4, or 0 where an in-place addition
 * overflows (nothing written). */
static inline __attribute__((always_inline, target("avx2"))) int store4s(const io_t *io,
                                                                         int64_t mode,
                                                                         int64_t fmt, int64_t i,
                                                                         const int64_t *src) {
    return store4(io, mode, fmt, i, _mm256_load_si256((const __m256i *)src)) ? 4 : 0;
}

/* The wide loop, four words a group (AVX2; dpf_table_wides). */
#define WIDE_BATCH 64
#define WL_NAME run_wide
#define WL_TARGET "avx2,bmi2,popcnt"
#define WL_LANES 4
#define WL_CTX wide_t
#define WL_INIT wide_init
#define WL_GROUP wide4
#define WL_STORE store4s
#include "table_wide_loop.h"
#undef WL_NAME
#undef WL_TARGET
#undef WL_LANES
#undef WL_CTX
#undef WL_INIT
#undef WL_GROUP
#undef WL_STORE

/* The wide loop's constants as 8-lane vectors (run_wide8, AVX-512F). */
typedef struct {
    const uint64_t *rec;
    uint64_t cshift;
    __m512i vsh, ucut, osh, hsh, qs, psh, c21, c42, c32;
    __m512i vmk, m21, m32, hmask, umask, omask, sbit, zero, lo, hi;
} wide8_t;

static inline __attribute__((always_inline, target("avx512f"))) void wide8_init(
    wide8_t *c, const tab_t *t) {
    wide_t w;
    wide_init(&w, t);
    c->rec = w.rec;
    c->cshift = w.cshift;
#define WIDEN_(f) c->f = _mm512_broadcastq_epi64(_mm256_castsi256_si128(w.f))
    WIDEN_(vsh); WIDEN_(ucut); WIDEN_(osh); WIDEN_(hsh); WIDEN_(qs); WIDEN_(psh);
    WIDEN_(c21); WIDEN_(c42); WIDEN_(c32); WIDEN_(vmk); WIDEN_(m21); WIDEN_(m32);
    WIDEN_(hmask); WIDEN_(umask); WIDEN_(omask); WIDEN_(sbit); WIDEN_(zero);
#undef WIDEN_
    /* the records' words 0 and 2 (1 and 3) of lanes 0..7 after the unpacks */
    c->lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    c->hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
}

/* wide4 on eight words b[pos..pos+7] (AVX-512F; dpf_table_wides512): the same decisions
 * lane by lane, as mask registers; the records of lanes j and j + 4 in one 64-byte vector,
 * transposed by two unpacks and two two-source permutes per pair of fields, the accepted
 * values moved to the front by vpcompressq (eight words written to dst). */
static inline __attribute__((always_inline, target("avx2,bmi2,popcnt,avx512f"))) int wide8(
    const wide8_t *c, const uint64_t *b, int64_t pos, int64_t *dst, int *kept) {
    const uint64_t *rec = c->rec;
    const uint64_t cs = c->cshift;
#define REC2_(j)                                                                            \
    _mm512_inserti64x4(                                                                     \
        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(rec + 4 * (b[pos + (j)] >> cs)))), \
        _mm256_loadu_si256((const __m256i *)(rec + 4 * (b[pos + (j) + 4] >> cs))), 1)
    const __m512i z0 = REC2_(0), z1 = REC2_(1), z2 = REC2_(2), z3 = REC2_(3);
#undef REC2_
    const __m512i t0 = _mm512_unpacklo_epi64(z0, z1), t1 = _mm512_unpackhi_epi64(z0, z1);
    const __m512i t2 = _mm512_unpacklo_epi64(z2, z3), t3 = _mm512_unpackhi_epi64(z2, z3);
    const __m512i e0 = _mm512_permutex2var_epi64(t0, c->lo, t2);   /* th | own | alias */
    const __m512i lali = _mm512_permutex2var_epi64(t0, c->hi, t2); /* alias's S | A */
    const __m512i lown = _mm512_permutex2var_epi64(t1, c->lo, t3); /* own item's S | A */
    const __m512i rr = _mm512_permutex2var_epi64(t1, c->hi, t3);   /* R_own | R_alias */
    const __m512i w = _mm512_loadu_si512((const void *)(b + pos));
    const __m512i vh = _mm512_and_si512(_mm512_srlv_epi64(w, c->vsh), c->vmk);
    const __m512i th = _mm512_and_si512(e0, c->m21);
    const __mmask8 own = _mm512_cmpgt_epi64_mask(th, vh);
    const __m512i it = _mm512_and_si512(
        _mm512_srlv_epi64(e0, _mm512_mask_blend_epi64(own, c->c42, c->c21)), c->m21);
    const __m512i line = _mm512_mask_blend_epi64(own, lali, lown);
    const __m512i rl = _mm512_and_si512(
        _mm512_srlv_epi64(rr, _mm512_maskz_mov_epi64((__mmask8)~own, c->c32)), c->m32);
    const __mmask8 sg = _mm512_test_epi64_mask(w, c->sbit);
    const __m512i off = _mm512_and_si512(_mm512_srlv_epi64(w, c->osh), c->omask);
    const __m512i h = _mm512_and_si512(_mm512_srlv_epi64(w, c->hsh), c->hmask);
    const __m512i u = _mm512_srlv_epi64(_mm512_and_si512(w, c->umask), c->ucut);
    const __m512i m = _mm512_add_epi64(_mm512_sllv_epi64(it, c->psh), off);
    const __m512i drop = _mm512_srlv_epi64(_mm512_mul_epu32(h, line), c->qs);
    const __m512i ta = _mm512_sub_epi64(_mm512_srli_epi64(line, 32), drop);
    const __m512i tr = _mm512_sub_epi64(rl, drop);
    const __mmask8 negz = (__mmask8)(_mm512_cmpeq_epi64_mask(m, c->zero) & sg);
    const unsigned acc = (unsigned)(_mm512_cmpgt_epi64_mask(ta, u) & (__mmask8)~negz);
    const unsigned rej = (unsigned)(negz | (__mmask8)~_mm512_cmpgt_epi64_mask(tr, u));
    const unsigned decided = (acc | rej) & 0xFFu;
    const int n = decided == 0xFFu ? 8 : __builtin_ctz(~decided);
    const __mmask8 k = (__mmask8)(acc & ((1u << n) - 1u));
    *kept = __builtin_popcount((unsigned)k);
    /* -m if the sign bit is set, else m; the accepted ones to the front */
    const __m512i val = _mm512_mask_sub_epi64(m, sg, c->zero, m);
    _mm512_storeu_si512((void *)dst, _mm512_maskz_compress_epi64(k, val));
    return n;
}

/* grid_store4_by (ginv != 0, every lane) on eight cells i..i+7 (AVX-512F): the same
 * operations in the same order on eight lanes (vrndscalepd with the same rounding
 * control as vroundpd's; vminpd / vmaxpd with the same operand order). */
static inline __attribute__((always_inline, target("avx2,avx512f"))) void grid_store8(
    const io_t *io, int64_t fmt, int64_t i, __m512i v) {
    const __m512d gstep = _mm512_set1_pd(io->g);
    const __m512d sat = _mm512_set1_pd(io->sat), nsat = _mm512_set1_pd(-io->sat);
    const __m512d xd = fmt == DPF_TABLE_F32
                           ? _mm512_cvtps_pd(_mm256_loadu_ps((const float *)io->fx + i))
                           : _mm512_loadu_pd((const double *)io->fx + i);
    __m512d qd = _mm512_mul_pd(xd, _mm512_set1_pd(io->ginv));
    qd = _mm512_roundscale_pd(qd, _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
    const __m512d vd = _mm512_sub_pd(
        _mm512_castsi512_pd(_mm512_add_epi64(v, _mm512_set1_epi64(0x4338000000000000ll))),
        _mm512_set1_pd(0x1.8p52));
    __m512d r = _mm512_add_pd(_mm512_mul_pd(qd, gstep), _mm512_mul_pd(vd, gstep));
    r = _mm512_min_pd(sat, _mm512_max_pd(nsat, r));
    if (fmt == DPF_TABLE_F64)
        _mm512_storeu_pd((double *)io->fout + i, r);
    else
        _mm256_storeu_ps((float *)io->fout + i, _mm512_cvtpd_ps(r));
}

/* Eight values from src to cells i..i+7: a grid's by grid_store8, the others' as two
 * store4 (8, or the 0 or 4 written before an in-place addition that overflows). */
static inline __attribute__((always_inline, target("avx2,avx512f"))) int store8(
    const io_t *io, int64_t mode, int64_t fmt, int64_t i, const int64_t *src) {
    if (mode == MODE_GRID) { /* the wide loop's grids have ginv != 0 (run_loop) */
        grid_store8(io, fmt, i, _mm512_load_si512((const void *)src));
        return 8;
    }
    if (!store4(io, mode, fmt, i, _mm256_load_si256((const __m256i *)src))) return 0;
    if (!store4(io, mode, fmt, i + 4, _mm256_load_si256((const __m256i *)(src + 4)))) return 4;
    return 8;
}

/* The wide loop, eight words a group (AVX-512F; dpf_table_wides512). */
#define WL_NAME run_wide8
#define WL_TARGET "avx2,bmi2,popcnt,avx512f,avx512vl"
#define WL_LANES 8
#define WL_CTX wide8_t
#define WL_INIT wide8_init
#define WL_GROUP wide8
#define WL_STORE store8
#include "table_wide_loop.h"
#undef WL_NAME
#undef WL_TARGET
#undef WL_LANES
#undef WL_CTX
#undef WL_INIT
#undef WL_GROUP
#undef WL_STORE

/* run_wide (dpf_table_wides) with its mode, output format and store schedule constants
 * (a float grid written in place: each batch right after its decisions).  Defined twice:
 * for AVX2, and with AVX-512VL enabled (dpf_table_wides512: the same intrinsics, EVEX
 * encoded where that helps, and 32 vector registers, so the loop's two dozen constants and
 * its values stay in registers instead of spilling to the stack); the same decisions and
 * stores, bit for bit. */
#define DEFINE_WIDES(NAME, TARGET, RUN)                                                            \
    DPF_HIDDEN __attribute__((noinline, target(TARGET))) int64_t NAME(                        \
        const tab_t *tp, const io_t *iop, int64_t mode, int64_t fmt, const uint64_t *b,      \
        int64_t pos, int64_t i, int64_t lim, int64_t *res) {                                  \
        const tab_t tl = *tp; /* local copies: the stores cannot alias them */                \
        const io_t il = *iop;                                                                 \
        const int sep = il.fout != il.fx;                                                     \
        switch (mode) {                                                                       \
        case MODE_WRITE: return RUN(&tl, &il, MODE_WRITE, 0, 1, b, pos, i, lim, res);    \
        case MODE_ADD: return RUN(&tl, &il, MODE_ADD, 0, 1, b, pos, i, lim, res);        \
        case MODE_SUB: return RUN(&tl, &il, MODE_SUB, 0, 1, b, pos, i, lim, res);        \
        default:                                                                              \
            if (fmt == DPF_TABLE_F64)                                                         \
                return sep ? RUN(&tl, &il, MODE_GRID, DPF_TABLE_F64, 1, b, pos, i, lim,  \
                                      res)                                                    \
                           : RUN(&tl, &il, MODE_GRID, DPF_TABLE_F64, 0, b, pos, i, lim,  \
                                      res);                                                   \
            if (fmt == DPF_TABLE_F32)                                                         \
                return sep ? RUN(&tl, &il, MODE_GRID, DPF_TABLE_F32, 1, b, pos, i, lim,  \
                                      res)                                                    \
                           : RUN(&tl, &il, MODE_GRID, DPF_TABLE_F32, 0, b, pos, i, lim,  \
                                      res);                                                   \
            return RUN(&tl, &il, MODE_GRID, DPF_TABLE_F64_F32, 1, b, pos, i, lim, res);  \
        }                                                                                     \
    }

DEFINE_WIDES(dpf_table_wides, "avx2,bmi2,popcnt", run_wide)
DEFINE_WIDES(dpf_table_wides512, "avx2,bmi2,popcnt,avx512f,avx512vl", run_wide8)

/* The half loop's constants (run_halves), as 4-lane vectors, and the arrays' addresses
 * as values (not reloaded after each store: with -fno-strict-aliasing the stores may alias
 * io and t).  Shift counts are vectors for the per-lane shifts (vpsrlvq: one micro-op; a
 * shift by an xmm count is two on AMD cores). */
typedef struct {
    const int64_t *xa;
    int64_t *oa;
    const uint64_t *dt;
    uint64_t hs;
    __m256i us, ks, kmask, kus, omask, ps, m17, m16, dqs, one, zero, lanes;
} half4_t;

static inline __attribute__((always_inline, target("avx2"))) void half4_init(
    half4_t *c, const tab_t *t, const io_t *io) {
    c->xa = io->x;
    c->oa = io->out;
    c->dt = t->direct;
    c->hs = t->hshift;
    c->us = _mm256_set1_epi64x((long long)t->hus);
    c->ks = _mm256_set1_epi64x((long long)t->k1);
    c->kmask = _mm256_set1_epi64x((long long)((1ull << t->ku) - 1u));
    c->kus = _mm256_set1_epi64x((long long)t->ku); /* wide bins: the offset above U's bits */
    c->omask = _mm256_set1_epi64x((long long)t->omask);
    c->ps = _mm256_set1_epi64x((long long)t->p);
    c->m17 = _mm256_set1_epi64x(0x1FFFF);
    c->m16 = _mm256_set1_epi64x(0xFFFF);
    c->dqs = _mm256_set1_epi64x((long long)t->dqs);
    c->one = _mm256_set1_epi64x(1);
    c->zero = _mm256_setzero_si256();
    c->lanes = _mm256_set_epi64x(3, 2, 1, 0);
}

/* Four proposals from the halves of w[0], w[1] (high, low, high, low): the four
 * direct-table entries by scalar loads (AVX2 gathers are slower than four loads on AMD
 * cores), the decisions as vectors; the accepted values of the proposals before the first
 * undecided half moved to the front and written to cells i.. as vectors (no branch per
 * proposal), their count to *cnt.  Returns how many halves are decided (4: all), or -1
 * when an in-place addition overflows (nothing written).  The entries e are
 * half4_entries(c, w), loaded a group ahead by the loop. */
static inline __attribute__((always_inline, target("avx2,bmi2"))) __m256i half4_entries(
    const half4_t *c, const uint64_t *w) {
    const uint64_t hs = c->hs;
    const uint64_t *const dt = c->dt;
    const uint64_t q0 = w[0] >> 32, q1 = w[0] & 0xFFFFFFFFu, q2 = w[1] >> 32,
                   q3 = w[1] & 0xFFFFFFFFu;
    return _mm256_set_epi64x((long long)dt[q3 >> hs], (long long)dt[q2 >> hs],
                             (long long)dt[q1 >> hs], (long long)dt[q0 >> hs]);
}

static inline __attribute__((always_inline, target("avx2,bmi2,popcnt"))) int half4(
    const half4_t *c, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *w,
    const __m256i e, int64_t i, const int wide, int *cnt) {
    /* the halves in stream order (high, low, high, low) as four 64-bit lanes */
    __m256i hv = _mm256_cvtepu32_epi64(
        _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)w), _MM_SHUFFLE(2, 3, 0, 1)));
    __m256i ut = _mm256_srlv_epi64(_mm256_and_si256(hv, c->kmask), c->us);
    __m256i sg = _mm256_and_si256(_mm256_srlv_epi64(hv, c->ks), c->one);
    __m256i m = _mm256_srli_epi64(e, D_ITEM); /* the item: bins of width 1, the value */
    __m256i ta = _mm256_and_si256(_mm256_srli_epi64(e, D_ACC), c->m17);
    __m256i tr = _mm256_and_si256(e, c->m17);
    if (wide) {
        /* the offset: the bin's first value plus it, and the lines' drop at it */
        __m256i off = _mm256_and_si256(_mm256_srlv_epi64(hv, c->kus), c->omask);
        m = _mm256_or_si256(_mm256_sllv_epi64(m, c->ps), off);
        __m256i drop = _mm256_srlv_epi64(
            _mm256_mul_epu32(off, _mm256_and_si256(_mm256_srli_epi64(e, D_SLOPE), c->m16)),
            c->dqs);
        ta = _mm256_sub_epi64(ta, drop);
        tr = _mm256_sub_epi64(tr, drop);
    }
    /* the lines and U's top bits are below 2^17 (the lines may be negative): signed
     * comparisons are exact */
    __m256i acc = _mm256_cmpgt_epi64(ta, ut);
    __m256i rej = _mm256_cmpgt_epi64(ut, tr);
    __m256i negz = _mm256_and_si256(_mm256_cmpeq_epi64(m, c->zero),
                                    _mm256_cmpeq_epi64(sg, c->one));
    int decided = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_or_si256(acc, rej)));
    /* the halves before the first undecided one are proposals the thresholds decide (an
     * undecided one reads the half after it: the lanes after it are not proposals of
     * their own) */
    int nvalid = decided == 15 ? 4 : __builtin_ctz(~(unsigned)decided & 15u);
    int keep = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_andnot_si256(negz, acc))) &
               ((1 << nvalid) - 1);
    int n = __builtin_popcount((unsigned)keep);
    __m256i nsg = _mm256_sub_epi64(c->zero, sg);
    __m256i v = _mm256_add_epi64(_mm256_xor_si256(m, nsg), sg);
    v = _mm256_permutevar8x32_epi32(v, _mm256_load_si256((const __m256i *)COMPACT[keep]));
    __m256i first = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), c->lanes);
    /* integer stores: always all four cells i..i+3 (< hi), the lanes past n with v = 0,
     * so no masked store (microcoded, slow on AMD cores) and no branch on n.  Those cells
     * are written again by the proposals that follow (or by the exact finisher of a
     * pending cell) before the chunk ends; until then they hold 0 (MODE_WRITE), x
     * (MODE_ADD: x itself in place) or what they held (MODE_SUB).  On an overflow a
     * separate out may keep x in up to three cells after the failing one (its contents
     * are unspecified then, dpfast.noise.integers). */
    if (mode == MODE_WRITE) {
        _mm256_storeu_si256((__m256i *)(c->oa + i), _mm256_and_si256(v, first));
    } else if (mode == MODE_SUB) {
        __m256i o = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(c->oa + i)),
                                     _mm256_and_si256(v, first));
        _mm256_storeu_si256((__m256i *)(c->oa + i), o);
    } else if (mode == MODE_ADD) {
        __m256i xi = _mm256_loadu_si256((const __m256i *)(c->xa + i));
        __m256i vz = _mm256_and_si256(v, first);
        __m256i r = _mm256_add_epi64(xi, vz);
        __m256i ovf = _mm256_and_si256(_mm256_xor_si256(xi, r), _mm256_xor_si256(vz, r));
        if (_mm256_movemask_pd(_mm256_castsi256_pd(ovf))) return -1;
        _mm256_storeu_si256((__m256i *)(c->oa + i), r);
    } else {
        grid_store4(io, fmt, i, v, n, first);
    }
    *cnt = n;
    return nvalid;
}

/* The half loop, four halves a group (AVX2; dpf_table_fast_avx2). */
#define HL_NAME run_halves
#define HL_TARGET "avx2,bmi2,popcnt"
#define HL_HALVES 4
#define HL_CTX half4_t
#define HL_INIT half4_init
#define HL_GROUP half4
#define HL_ENTRIES half4_entries
#define HL_ETYPE __m256i
#define HL_EZERO _mm256_setzero_si256()
#ifndef DPF_HALVES_PIPE
#define DPF_HALVES_PIPE 1
#endif
#define HL_PIPE DPF_HALVES_PIPE
#include "table_half_loop.h"
#undef HL_NAME
#undef HL_TARGET
#undef HL_HALVES
#undef HL_CTX
#undef HL_INIT
#undef HL_GROUP
#undef HL_ENTRIES
#undef HL_ETYPE
#undef HL_EZERO
#undef HL_PIPE

/* run_halves for bins of width 1 or wide bins (the offset's bits a constant where
 * inlined). */
static inline __attribute__((always_inline, target("avx2,bmi2,popcnt"))) int64_t run_avx2(
    const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *b, half_t *hp,
    int64_t i, int64_t hi, int64_t lim, int64_t *res) {
    if (t->p > 0) return run_halves(t, io, mode, fmt, b, hp, i, hi, lim, res, 1);
    return run_halves(t, io, mode, fmt, b, hp, i, hi, lim, res, 0);
}

/* The half loop's constants as 8-lane vectors (run_halves8, AVX-512F). */
typedef struct {
    const int64_t *xa;
    int64_t *oa;
    const uint64_t *dt;
    uint64_t hs;
    __m512i us, kmask, sbit, kus, omask, ps, m17, m16, dqs, zero, hsv;
    __m256i lanes;
} half8_t;

static inline __attribute__((always_inline, target("avx2,avx512f"))) void half8_init(
    half8_t *c, const tab_t *t, const io_t *io) {
    c->xa = io->x;
    c->oa = io->out;
    c->dt = t->direct;
    c->hs = t->hshift;
    c->us = _mm512_set1_epi64((long long)t->hus);
    c->kmask = _mm512_set1_epi64((long long)((1ull << t->ku) - 1u));
    c->sbit = _mm512_set1_epi64((long long)(1ull << t->k1));
    c->kus = _mm512_set1_epi64((long long)t->ku);
    c->omask = _mm512_set1_epi64((long long)t->omask);
    c->ps = _mm512_set1_epi64((long long)t->p);
    c->m17 = _mm512_set1_epi64(0x1FFFF);
    c->m16 = _mm512_set1_epi64(0xFFFF);
    c->dqs = _mm512_set1_epi64((long long)t->dqs);
    c->zero = _mm512_setzero_si512();
    c->hsv = _mm512_set1_epi64((long long)t->hshift);
    c->lanes = _mm256_set_epi64x(3, 2, 1, 0);
}

/* half4 on the eight halves of w[0..3] (AVX-512F; dpf_table_fast_avx512): the same
 * decisions lane by lane, as mask registers, the accepted values moved to the front by
 * vpcompressq, the integer modes' eight cells i..i+7 written as one vector (the lanes
 * past the accepted ones 0, as half4's four), a grid's as two grid_store4.  The direct
 * table's eight entries by one vpgatherqq (the loop harness on a Xeon, discrete Laplace
 * 1000: 1.25-1.31x the four-half loop, against 1.16-1.19x with eight scalar loads);
 * -DDPF_HALVES8_GATHER=0 builds the scalar loads, for a CPU whose gathers are slow (not
 * measured on AMD Zen 4). */
#ifndef DPF_HALVES8_GATHER
#define DPF_HALVES8_GATHER 1
#endif
static inline __attribute__((always_inline, target("avx2,popcnt,avx512f,avx512vl"))) __m512i
half8_entries(const half8_t *c, const uint64_t *w) {
#if DPF_HALVES8_GATHER
    const __m512i hv = _mm512_cvtepu32_epi64(
        _mm256_shuffle_epi32(_mm256_loadu_si256((const __m256i *)w), _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_i64gather_epi64(_mm512_srlv_epi64(hv, c->hsv), (const void *)c->dt, 8);
#else
    const uint64_t hs = c->hs;
    const uint64_t *const dt = c->dt;
    return _mm512_set_epi64(
        (long long)dt[(w[3] & 0xFFFFFFFFu) >> hs], (long long)dt[(w[3] >> 32) >> hs],
        (long long)dt[(w[2] & 0xFFFFFFFFu) >> hs], (long long)dt[(w[2] >> 32) >> hs],
        (long long)dt[(w[1] & 0xFFFFFFFFu) >> hs], (long long)dt[(w[1] >> 32) >> hs],
        (long long)dt[(w[0] & 0xFFFFFFFFu) >> hs], (long long)dt[(w[0] >> 32) >> hs]);
#endif
}

static inline __attribute__((always_inline, target("avx2,popcnt,avx512f,avx512vl"))) int half8(
    const half8_t *c, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *w,
    const __m512i e, int64_t i, const int wide, int *cnt) {
    /* the halves in stream order (high, low of each word) as eight 64-bit lanes */
    const __m512i hv = _mm512_cvtepu32_epi64(
        _mm256_shuffle_epi32(_mm256_loadu_si256((const __m256i *)w), _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512i ut = _mm512_srlv_epi64(_mm512_and_si512(hv, c->kmask), c->us);
    const __mmask8 sg = _mm512_test_epi64_mask(hv, c->sbit);
    __m512i m = _mm512_srli_epi64(e, D_ITEM);
    __m512i ta = _mm512_and_si512(_mm512_srli_epi64(e, D_ACC), c->m17);
    __m512i tr = _mm512_and_si512(e, c->m17);
    if (wide) {
        const __m512i off = _mm512_and_si512(_mm512_srlv_epi64(hv, c->kus), c->omask);
        m = _mm512_or_si512(_mm512_sllv_epi64(m, c->ps), off);
        const __m512i drop = _mm512_srlv_epi64(
            _mm512_mul_epu32(off, _mm512_and_si512(_mm512_srli_epi64(e, D_SLOPE), c->m16)),
            c->dqs);
        ta = _mm512_sub_epi64(ta, drop);
        tr = _mm512_sub_epi64(tr, drop);
    }
    const unsigned acc = _mm512_cmpgt_epi64_mask(ta, ut);
    const unsigned rej = _mm512_cmpgt_epi64_mask(ut, tr);
    const unsigned negz = _mm512_cmpeq_epi64_mask(m, c->zero) & sg;
    const unsigned decided = (acc | rej) & 0xFFu;
    const int nvalid = decided == 0xFFu ? 8 : __builtin_ctz(~decided);
    const __mmask8 keep = (__mmask8)(acc & ~negz & ((1u << nvalid) - 1u));
    const int n = __builtin_popcount((unsigned)keep);
    const __m512i v =
        _mm512_maskz_compress_epi64(keep, _mm512_mask_sub_epi64(m, sg, c->zero, m));
    if (mode == MODE_WRITE) {
        _mm512_storeu_si512((void *)(c->oa + i), v);
    } else if (mode == MODE_SUB) {
        _mm512_storeu_si512((void *)(c->oa + i),
                            _mm512_sub_epi64(_mm512_loadu_si512((const void *)(c->oa + i)), v));
    } else if (mode == MODE_ADD) {
        const __m512i xi = _mm512_loadu_si512((const void *)(c->xa + i));
        const __m512i rs = _mm512_add_epi64(xi, v);
        const __m512i ovf = _mm512_and_si512(_mm512_xor_si512(xi, rs), _mm512_xor_si512(v, rs));
        if (_mm512_cmplt_epi64_mask(ovf, c->zero)) return -1;
        _mm512_storeu_si512((void *)(c->oa + i), rs);
    } else {
        const int c0 = n < 4 ? n : 4;
        grid_store4(io, fmt, i, _mm512_castsi512_si256(v), c0,
                    _mm256_cmpgt_epi64(_mm256_set1_epi64x(c0), c->lanes));
        if (n > 4)
            grid_store4(io, fmt, i + 4, _mm512_extracti64x4_epi64(v, 1), n - 4,
                        _mm256_cmpgt_epi64(_mm256_set1_epi64x(n - 4), c->lanes));
    }
    *cnt = n;
    return nvalid;
}

/* The half loop, eight halves a group (AVX-512F; dpf_table_fast_avx512). */
#define HL_NAME run_halves8
#define HL_TARGET "avx2,popcnt,avx512f,avx512vl"
#define HL_HALVES 8
#define HL_CTX half8_t
#define HL_INIT half8_init
#define HL_GROUP half8
#define HL_ENTRIES half8_entries
#define HL_ETYPE __m512i
#define HL_EZERO _mm512_setzero_si512()
#ifndef DPF_HALVES8_PIPE
#define DPF_HALVES8_PIPE 1
#endif
#define HL_PIPE DPF_HALVES8_PIPE
#include "table_half_loop.h"
#undef HL_NAME
#undef HL_TARGET
#undef HL_HALVES
#undef HL_CTX
#undef HL_INIT
#undef HL_GROUP
#undef HL_ENTRIES
#undef HL_ETYPE
#undef HL_EZERO
#undef HL_PIPE

static inline __attribute__((always_inline, target("avx2,popcnt,avx512f,avx512vl"))) int64_t
run_avx512(const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *b,
           half_t *hp, int64_t i, int64_t hi, int64_t lim, int64_t *res) {
    if (t->p > 0) return run_halves8(t, io, mode, fmt, b, hp, i, hi, lim, res, 1);
    return run_halves8(t, io, mode, fmt, b, hp, i, hi, lim, res, 0);
}

DEFINE_FAST(dpf_table_fast_avx2, DPF_HIDDEN __attribute__((target("avx2,bmi2,popcnt"))), 1, run_avx2)
/* ... and its AVX-512VL build (dpf_table_simd() == 2), as the wide loop's: the same
 * intrinsics with 32 vector registers */
DEFINE_FAST(dpf_table_fast_avx512,
            DPF_HIDDEN __attribute__((target("avx2,popcnt,avx512f,avx512vl"))), 2, run_avx512)
#else
typedef int dpf_table_avx2_unused; /* (an empty translation unit is not ISO C) */
#endif
