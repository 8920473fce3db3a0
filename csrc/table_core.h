/* The envelope-table kernel's C common case: what csrc/table.c (the portable loops and
 * dpf_table_fast) and csrc/table_avx2.c (the AVX2 loops) share -- the tables' and the
 * output's descriptions, the step (the alias test, the squeeze, the certificate), the
 * stores, the half-word steps and the loop dispatcher -- as static inline functions, so
 * each loop inlines them with its constants.  Included by those two files only. */
#ifndef DPF_TABLE_CORE_H
#define DPF_TABLE_CORE_H

#include "dpfast.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { MODE_WRITE = 0, MODE_ADD = 1, MODE_SUB = 2, MODE_GRID = 3 };
/* a direct table's entry: item << D_ITEM | S << D_SLOPE | A << D_ACC | R (A, R: 17 bits,
 * S: 16; dpfast/_kernels/table.py D_ITEM, D_SLOPE, D_ACC) */
enum { D_ITEM = 50, D_SLOPE = 34, D_ACC = 17 };
#define GRID_EXACT 9007199254740992.0 /* 2^53: |v| below it converts to double exactly */

typedef struct {
    const uint64_t *pack, *thresh, *sel, *trm1, *direct;
    /* a table without a direct table: four words per alias column (threshold's top bits,
     * own item, alias; each item's acceptance and rejection lines on U's top 31 known
     * bits, which are U's known bits >> ucut) and a trailer, for the wide loop
     * (dpfast/noise/_kernel_table.py, column_records) */
    const uint64_t *rec;
    uint64_t ucut;
    const double *flo, *fhi;
    int64_t dbits; /* the direct table's index bits; 0: no direct table (scalar loop) */
    int vgrid; /* every value of the table is below 2^51 (the vector grid store) */
    uint64_t cshift, vshift, vmask, lomask, zshift, sshift, oshift, omask, umask, tshift;
    uint64_t nbins;
    int64_t p, law;
    double coef, uscale;
    /* the half-word layout of a table with a direct table (dbits > 0): a proposal's first
     * half is the index (hshift = 32 - dbits), the sign (bit k1), the offset in the bin
     * (p bits, omask) and U's top ku = k1 - p bits, of which the thresholds read the top
     * ones (>> hus); q = the alias value's bits below the index, from the second half
     * (virtual_word) */
    uint64_t hshift, hus, q, k1, ku;
    uint64_t dqs; /* the entries' lines: the drop at offset h is (h S) >> dqs */
    int by_step; /* decide every proposal by step() on its virtual word (impl 1, tests) */
} tab_t;

/* The position in a chunk's keystream buffer: the next word, and a saved low half. */
typedef struct {
    int64_t pos;
    int64_t hh; /* 1: hv, the low half of word pos - 1, is the next half */
    uint64_t hv;
} half_t;

typedef struct {
    const int64_t *x;
    int64_t *out;
    const void *fx;
    void *fout;
    int64_t fmt; /* grid: DPF_TABLE_F64, DPF_TABLE_F32 or DPF_TABLE_F64_F32 */
    double ginv, g, sat;
    /* the build of the loop running (a constant where inlined): 0 portable, 1 AVX2 (rint
     * is one roundsd), 2 AVX-512VL (the wide loop's AVX-512VL build too) */
    int simd;
} io_t;

/* One proposal's outcome. */
enum { STEP_STOP = -1, STEP_REJECT = 0, STEP_ACCEPT = 1 };

/* The proposal of word xw = b[*at]: STEP_ACCEPT (*v, *sg, *item, *ux set), STEP_REJECT or
 * STEP_STOP (the general loop's case).  A tie of the alias value's top bits with the
 * threshold reads the next word b[*at + 1] (*at moves to it), or stops where that is not
 * below lim (the half-word loops pass lim 0: the general loop takes every tie). */
static inline __attribute__((always_inline)) int step_core(const tab_t *t, uint64_t xw,
                                                             const uint64_t *b, int64_t *at,
                                                             int64_t lim, int64_t *v,
                                                             int64_t *sg, int64_t *item,
                                                             uint64_t *ux) {
    uint64_t col = xw >> t->cshift;
    uint64_t th = t->pack[col] & 0xFFFFFFFFu;
    uint64_t vh = (xw >> t->vshift) & t->vmask;
    uint64_t k4 = (col << 2) | ((uint64_t)(vh >= th) << 1);
    uint64_t it = t->sel[k4];
    uint64_t tu = t->sel[k4 + 1];
    /* a tie: v's other bits are the top of the next word (none is read where the threshold
     * has no bits below its top ones: v >= the threshold, the alias) */
    if (vh == th && (t->thresh[col] & t->lomask) != 0) {
        if (*at + 1 >= lim) return STEP_STOP; /* (in the next buffer: the general loop) */
        *at += 1;
        if ((b[*at] >> t->zshift) < (t->thresh[col] & t->lomask)) {
            it = t->sel[col << 2];
            tu = t->sel[(col << 2) + 1];
        }
    }
    if (it >= t->nbins) {
        if (it == t->nbins) return STEP_STOP; /* the tail item: pending, general loop */
        return STEP_REJECT; /* padding */
    }
    int64_t s = (int64_t)((xw >> t->sshift) & 1u);
    int64_t off = (int64_t)((xw >> t->oshift) & t->omask);
    uint64_t u = xw & t->umask;
    int64_t a = (int64_t)it << t->p;
    int64_t m = a + off;
    if ((m | (s ^ 1)) == 0) return STEP_REJECT; /* (negative, 0) */
    if (u < tu) {
        /* accepted: U < ta 2^-64 <= the bin's smallest acceptance probability */
    } else if (t->p == 0) {
        if ((u << t->tshift) > t->trm1[it]) return STEP_REJECT;
        return STEP_STOP; /* open: the general loop's full certificate */
    } else {
        double g0 = (double)off * t->coef;
        if (t->law == 1) g0 *= (double)(m + a);
        double gh = g0 * (1.0 + 0x1p-48);
        if (gh >= 0.5) return STEP_STOP;
        double uf = (double)u;
        double u_hi = (uf + 1.0) * t->uscale * (1.0 + 0x1p-50);
        /* exp(-g) >= 1 - gh + gh^2/2 - gh^3/6 (alternating series, 0 <= g <= gh < 1/2);
         * the factor 1 - 2^-47 keeps every decision one the general loop's certificate
         * on the same bits also takes */
        double lo = 1.0 - gh * (1.0 - gh * (0.5 - gh * (1.0 / 6.0))) - 0x1p-50;
        if (u_hi > t->flo[it] * lo * (1.0 - 0x1p-47)) {
            /* exp(-g) <= 1 - gl + gl^2/2 - gl^3/6 + gl^4/24 */
            double gl = g0 * (1.0 - 0x1p-48);
            double u_lo = uf * t->uscale * (1.0 - 0x1p-50);
            double up = 1.0 - gl * (1.0 - gl * (0.5 - gl * (1.0 / 6.0 - gl * (1.0 / 24.0))));
            if (u_lo >= t->fhi[it] * (up + 0x1p-50) * (1.0 + 0x1p-47)) return STEP_REJECT;
            return STEP_STOP;
        }
    }
    *v = (m ^ -s) + s; /* -m if s else m, without a branch on the random sign */
    *sg = s;
    *item = (int64_t)it;
    *ux = u;
    return STEP_ACCEPT;
}

/* The proposal whose first word is b[*pos] (< lim): STEP_ACCEPT (*v, *sg, *item, *ux set,
 * *pos past its words), STEP_REJECT (*pos past its words) or STEP_STOP (*pos unchanged:
 * the general loop's case). */
static inline __attribute__((always_inline)) int step(const tab_t *t, const uint64_t *b,
                                                        int64_t *pos, int64_t lim, int64_t *v,
                                                        int64_t *sg, int64_t *item,
                                                        uint64_t *ux) {
    int64_t at = *pos;
    int s = step_core(t, b[at], b, &at, lim, v, sg, item, ux);
    if (s != STEP_STOP) *pos = at + 1;
    return s;
}

/* rint in the default rounding mode (to nearest, ties to even) without a libm call and
 * without a branch on x (a private value: no timing that depends on it): for |x| < 2^52,
 * (|x| + 2^52) - 2^52 is |x| rounded to an integer by the addition itself; larger doubles
 * (and NaN) are kept as they are, by a bit mask. */
static inline __attribute__((always_inline)) double rint_even(double x) {
    double a = fabs(x);
    double r = copysign((a + 0x1p52) - 0x1p52, x);
    uint64_t rb, xb;
    memcpy(&rb, &r, sizeof rb);
    memcpy(&xb, &x, sizeof xb);
    uint64_t keep = -(uint64_t)(a < 0x1p52); /* all ones where the addition rounds */
    rb = (rb & keep) | (xb & ~keep);
    memcpy(&r, &rb, sizeof r);
    return r;
}

/* Write cell i (dpfast/_kernels/samplers.py _store): 1 written, 0 overflow (nothing
 * written), -1 (MODE_GRID) |v| too large for the float path (nothing written).  mode and
 * fmt are constants where it is inlined. */
static inline __attribute__((always_inline)) int store(const io_t *io, int64_t mode,
                                                         int64_t fmt, int64_t i, int64_t v) {
    if (mode == MODE_GRID) {
        if (v >= (int64_t)GRID_EXACT || v <= -(int64_t)GRID_EXACT) return -1;
        double xi = fmt == DPF_TABLE_F32 ? (double)((const float *)io->fx)[i]
                                         : ((const double *)io->fx)[i];
        /* rint(x/g) g and v g are exact doubles (g a power of two, |v| < 2^53), so one
         * correctly rounded addition gives the exact grid value rounded once */
        double y = io->ginv != 0.0 ? xi * io->ginv : xi / io->g;
        double q = io->simd ? __builtin_rint(y) : rint_even(y);
        double r = q * io->g + (double)v * io->g;
        /* numba's min(max(r, -sat), sat): a NaN passes through (x is finite here) */
        r = -io->sat > r ? -io->sat : r;
        r = io->sat < r ? io->sat : r;
        if (fmt == DPF_TABLE_F64)
            ((double *)io->fout)[i] = r;
        else
            ((float *)io->fout)[i] = (float)r;
        return 1;
    }
    if (mode == MODE_ADD) {
        int64_t xi = io->x[i];
        /* wrapping add, then the two's-complement overflow test */
        int64_t r = (int64_t)((uint64_t)xi + (uint64_t)v);
        if (((xi ^ r) & (v ^ r)) < 0) return 0;
        io->out[i] = r;
    } else if (mode == MODE_SUB) {
        io->out[i] = (int64_t)((uint64_t)io->out[i] - (uint64_t)v);
    } else {
        io->out[i] = v;
    }
    return 1;
}

/* The run's result: res[0] pos, res[1] i, res[2] v, res[3] sg, res[4] item, res[5] ux. */
static inline __attribute__((always_inline)) int64_t finish(int64_t *res, int64_t pos,
                                                             int64_t i, int64_t r, int64_t v,
                                                             int64_t sg, int64_t item,
                                                             uint64_t ux) {
    res[0] = pos;
    res[1] = i;
    res[2] = v;
    res[3] = sg;
    res[4] = item;
    res[5] = (int64_t)ux;
    return r;
}

/* Scalar steps from *pos while *pos < end (and the proposal does not stop): GO_ON to go
 * on, else the run's result is in res and the return value is r + 2 (r in {-1, 0, 1}, so
 * 1..3: never GO_ON). */
#define GO_ON 0
static inline __attribute__((always_inline)) int64_t scalar_steps(
    const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *b,
    int64_t *pos, int64_t *i, int64_t end, int64_t lim, int64_t *res) {
    while (*pos < end) {
        int64_t v = 0, sg = 0, item = 0;
        uint64_t ux = 0;
        int s = step(t, b, pos, lim, &v, &sg, &item, &ux);
        if (s == STEP_STOP) return finish(res, *pos, *i, 1, 0, 0, 0, 0) + 2;
        if (s == STEP_REJECT) continue;
        int r = store(io, mode, fmt, *i, v);
        if (r != 1) return finish(res, *pos, *i, r, v, sg, item, ux) + 2;
        *i += 1;
    }
    return GO_ON;
}

/* The next half-word of the buffer (the high half of a word first, then its low half):
 * 0 when none is left before word lim. */
static inline __attribute__((always_inline)) int next_half(half_t *h, const uint64_t *b,
                                                             int64_t lim, uint64_t *half) {
    if (h->hh) {
        h->hh = 0;
        *half = h->hv;
        h->hv = 0; /* no half saved: hv 0, as the general loop keeps it */
        return 1;
    }
    if (h->pos >= lim) return 0;
    uint64_t w = b[h->pos++];
    h->hh = 1;
    h->hv = w & 0xFFFFFFFFu;
    *half = w >> 32;
    return 1;
}

/* A proposal's word in the one-word layout (dpfast/_kernels/table.py _virtual_word) from
 * its halves: the index (the alias column and the alias value's top bits), the value's
 * other q bits (top of h2), the sign, U's top k1 bits (h1), U's other bits (h2). */
static inline __attribute__((always_inline)) uint64_t virtual_word(const tab_t *t, uint64_t h1,
                                                                     uint64_t h2) {
    const uint64_t d = 32 - t->hshift; /* dbits */
    uint64_t idx = h1 >> t->hshift;
    uint64_t sgn = (h1 >> t->k1) & 1u;
    uint64_t ut = h1 & ((1ull << t->k1) - 1u);
    uint64_t vlo = h2 >> (32 - t->q);
    uint64_t ulo = h2 & ((1ull << (32 - t->q)) - 1u);
    return (idx << (64 - d)) | (vlo << (64 - d - t->q)) | (sgn << (63 - d - t->q)) |
           (ut << (32 - t->q)) | ulo;
}

/* Proposals of the half-word layout (a table with a direct table) while cells are left
 * (*i < hi) and the next one's first half lies before word end (or is a saved half).  A
 * proposal's first half h1 indexes the direct table: its item and its lines on U's top
 * bits u at the proposal's offset (wide bins; A and R themselves for bins of width 1)
 * decide most (u below the acceptance line accepts unless the proposal is (negative, 0),
 * u above the rejection line rejects) and the proposal takes that one half; any other
 * takes the next half too, and
 * step_core decides on their virtual word (a tie stops: the general loop reads the next
 * two halves).  t->by_step (tests): every decision by step_core, on the virtual word of
 * h1 and zeros where the thresholds decide.  Returns as scalar_steps; on a stop *h is the
 * proposal's start. */
static inline __attribute__((always_inline)) int64_t half_steps(
    const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *b, half_t *h,
    int64_t *i, int64_t hi, int64_t end, int64_t lim, int64_t *res, const int wide) {
    while (*i < hi && (h->hh || h->pos < end)) {
        const half_t at = *h;
        uint64_t h1, h2 = 0;
        if (!next_half(h, b, lim, &h1)) break;
        uint64_t e = t->direct[h1 >> t->hshift];
        int64_t u = (int64_t)((h1 & ((1ull << t->ku) - 1u)) >> t->hus);
        /* the entry's lines at the offset (0 for bins of width 1) */
        int64_t drop = wide ? (int64_t)((((h1 >> t->ku) & t->omask) *
                                         ((e >> D_SLOPE) & 0xFFFFu)) >> t->dqs)
                            : 0;
        int64_t acc = (int64_t)((e >> D_ACC) & 0x1FFFFu) - drop;
        int64_t rej = (int64_t)(e & 0x1FFFFu) - drop;
        int64_t v = 0, sg = 0, item = 0;
        uint64_t ux = 0;
        int s;
        if (u < acc || u > rej) {
            if (t->by_step) {
                int64_t at = 0;
                s = step_core(t, virtual_word(t, h1, 0), NULL, &at, 0, &v, &sg, &item, &ux);
            } else if (u > rej) {
                s = STEP_REJECT;
            } else {
                /* the bin's first value and the offset in it (wide bins) */
                item = (int64_t)(e >> D_ITEM);
                int64_t m = wide ? (int64_t)(((uint64_t)item << t->p) |
                                             ((h1 >> t->ku) & t->omask))
                                 : item;
                sg = (int64_t)((h1 >> t->k1) & 1u);
                /* U's bits as the step returns them (the unread ones 0) */
                ux = (h1 & ((1ull << t->ku) - 1u)) << (32 - t->q);
                s = (m | (sg ^ 1)) == 0 ? STEP_REJECT : STEP_ACCEPT; /* (negative, 0) */
                v = (m ^ -sg) + sg;
            }
        } else {
            if (!next_half(h, b, lim, &h2)) {
                *h = at;
                return finish(res, h->pos, *i, 1, 0, 0, 0, 0) + 2;
            }
            int64_t at = 0;
            s = step_core(t, virtual_word(t, h1, h2), NULL, &at, 0, &v, &sg, &item, &ux);
        }
        if (s == STEP_STOP) {
            *h = at;
            return finish(res, h->pos, *i, 1, 0, 0, 0, 0) + 2;
        }
        if (s == STEP_REJECT) continue;
        int r = store(io, mode, fmt, *i, v);
        if (__builtin_expect(r != 1, 0)) return finish(res, h->pos, *i, r, v, sg, item, ux) + 2;
        *i += 1;
    }
    return GO_ON;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DPF_TABLE_AVX2 1
/* The AVX2 loops (csrc/table_avx2.c), library-internal. */
#define DPF_HIDDEN __attribute__((visibility("hidden")))
DPF_HIDDEN int64_t dpf_table_scalar_grid(const tab_t *t, const io_t *io, int64_t fmt,
                                         const uint64_t *b, int64_t pos, int64_t i, int64_t lim,
                                         int64_t *res);
DPF_HIDDEN int64_t dpf_table_wides(const tab_t *t, const io_t *io, int64_t mode, int64_t fmt,
                                   const uint64_t *b, int64_t pos, int64_t i, int64_t lim,
                                   int64_t *res);
DPF_HIDDEN int64_t dpf_table_wides512(const tab_t *t, const io_t *io, int64_t mode, int64_t fmt,
                                      const uint64_t *b, int64_t pos, int64_t i, int64_t lim,
                                      int64_t *res);
DPF_HIDDEN int64_t dpf_table_fast_avx2(const tab_t *tp, const io_t *iop, int64_t mode,
                                       int64_t fmt, const uint64_t *b, half_t *h, int64_t i,
                                       int64_t hi, int64_t lim, int64_t *res);
DPF_HIDDEN int64_t dpf_table_fast_avx512(const tab_t *tp, const io_t *iop, int64_t mode,
                                         int64_t fmt, const uint64_t *b, half_t *h, int64_t i,
                                         int64_t hi, int64_t lim, int64_t *res);
#endif

/* The loop from h to lim (cells below hi): the half-word loop of a table with a direct
 * table (t->dbits > 0), else the step loop; on an AVX2 CPU (io->simd, a constant where
 * inlined) the step loop's grid stores go four at a time (run_scalar_grid). */
static inline __attribute__((always_inline)) int64_t run_loop(
    const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *b, half_t *h,
    int64_t i, int64_t hi, int64_t lim, int64_t *res) {
    if (t->dbits > 0) {
        int64_t r = t->p > 0 ? half_steps(t, io, mode, fmt, b, h, &i, hi, lim, lim, res, 1)
                             : half_steps(t, io, mode, fmt, b, h, &i, hi, lim, lim, res, 0);
        if (r != GO_ON) return r - 2;
        return finish(res, h->pos, i, 1, 0, 0, 0, 0);
    }
#ifdef DPF_TABLE_AVX2
    /* the wide loop's grid stores multiply by ginv (a grid whose 1/g is not a normal
     * double takes the step loop) */
    if (io->simd && (mode != MODE_GRID || (t->vgrid && io->ginv != 0.0)))
        return io->simd == 2 ? dpf_table_wides512(t, io, mode, fmt, b, h->pos, i, lim, res)
                             : dpf_table_wides(t, io, mode, fmt, b, h->pos, i, lim, res);
    if (io->simd) return dpf_table_scalar_grid(t, io, fmt, b, h->pos, i, lim, res);
#endif
    int64_t pos = h->pos;
    int64_t r = scalar_steps(t, io, mode, fmt, b, &pos, &i, lim, lim, res);
    if (r != GO_ON) return r - 2;
    return finish(res, pos, i, 1, 0, 0, 0, 0);
}


/* Each (mode, output format) as its own loop: the store is a constant where inlined. */
#define DISPATCH(RUN)                                                                  \
    switch (mode) {                                                                   \
    case MODE_WRITE: return RUN(&t, &io, MODE_WRITE, 0, b, h, i, hi, lim, res);        \
    case MODE_ADD: return RUN(&t, &io, MODE_ADD, 0, b, h, i, hi, lim, res);            \
    case MODE_SUB: return RUN(&t, &io, MODE_SUB, 0, b, h, i, hi, lim, res);            \
    default:                                                                          \
        if (fmt == DPF_TABLE_F64) return RUN(&t, &io, MODE_GRID, DPF_TABLE_F64, b, h, i,  \
                                             hi, lim, res);                           \
        if (fmt == DPF_TABLE_F32) return RUN(&t, &io, MODE_GRID, DPF_TABLE_F32, b, h, i,  \
                                             hi, lim, res);                           \
        return RUN(&t, &io, MODE_GRID, DPF_TABLE_F64_F32, b, h, i, hi, lim, res);     \
    }

/* A dispatcher: the loop RUN on a copy of the tables and io, SIMD (a constant: io.simd)
 * telling the stores whether rint is one instruction here and run_loop which wide loop
 * build to call. */
#define DEFINE_FAST(NAME, ATTR, SIMD, RUN)                                              \
    ATTR int64_t NAME(const tab_t *tp, const io_t *iop, int64_t mode, int64_t fmt, \
                             const uint64_t *b, half_t *h, int64_t i, int64_t hi,        \
                             int64_t lim, int64_t *res) {                                \
        const tab_t t = *tp;                                                             \
        io_t io = *iop;                                                                  \
        io.simd = SIMD;                                                                  \
        DISPATCH(RUN)                                                                    \
    }

#endif /* DPF_TABLE_CORE_H */
