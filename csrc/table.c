/* The envelope-table kernel's common case (dpfast/_kernels/table.py): one-word proposals
 * decided by the squeeze, written to the output, while the chunk's keystream buffer has
 * words.  Called by name from the numba kernel (table_kernel_serial), which handles
 * everything else (ties across a buffer end, the tail item, proposals the squeeze leaves
 * open, pending rows) in its general loop.
 *
 * Contract (the same as the numba general loop, word for word): it takes exactly the
 * decisions of the general loop on the same words -- same words, same order (a tie of the
 * alias value's top bits reads the next word), and only decisions certified on the same
 * bits -- and it stops *before* a proposal's first word at anything else, so the general
 * loop takes that proposal.  A word gives at most one cell, so stopping after hi - i
 * words keeps i <= hi without a test of i.
 *
 * The loops (docs/design.md): the step loop (step(): the alias test, the column's
 * selection table sel, the squeeze; bins wider than 2^8), the direct table's loop (bins
 * of width 1 to 2^8, in half-words: one load of a half's item and its lines on U's top
 * bits at the offset decides most proposals; the rest go through step()), and on x86-64
 * with AVX2 (chosen at run time, no -march flags; each also built with AVX-512VL) the
 * direct table four halves at a time (run_avx2) and the wider bins four words at a time
 * (run_wide: per-column records with each item's acceptance and rejection lines), their
 * decisions and stores as vectors.  All give the same output; dpf_table_fast's `impl`
 * argument forces one (tests).  Floating-point expressions are written in the numba
 * kernel's order and compiled with -ffp-contract=off (no fused multiply-adds), so every
 * rounding is the one the certificates were written for.
 *
 * This file holds the portable loop's dispatcher and the entry point; the shared core
 * (the step, the stores, the half-word steps, the loop dispatcher) is csrc/table_core.h,
 * the AVX2 loops are csrc/table_avx2.c. */
#include "table_core.h"

DEFINE_FAST(fast_portable, static, 0, run_loop)

/* 1 when the direct table runs four words at a time (AVX2), 2 when its loops and the wide
 * loop run their AVX-512VL builds (32 vector registers; within DPFAST_SIMD's cap, as the
 * keystream's 16-lane path), 0 for the portable loops (DPFAST_SIMD=portable or a CPU
 * without AVX2). */
int dpf_table_simd(void) {
#ifdef DPF_TABLE_AVX2
    static int level = -1;
    if (level < 0) {
        __builtin_cpu_init();
        level = dpf_simd_cap() >= 2 && __builtin_cpu_supports("avx2") &&
                        __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt")
                    ? 1
                    : 0;
        if (level && dpf_simd_cap() >= 3 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512vl"))
            level = 2;
    }
    return level;
#else
    return 0;
#endif
}

int64_t dpf_table_fast(int64_t impl, int64_t law, const uint64_t *b, int64_t n, int64_t pos,
                       int64_t hh, uint64_t hv, int64_t i, int64_t hi, const int64_t *x,
                       int64_t *out, const void *fx, void *fout, int64_t fmt, int64_t mode,
                       double ginv, double g, double sat, const uint64_t *pack,
                       const uint64_t *thresh, const uint64_t *sel, const uint64_t *trm1,
                       const double *flo, const double *fhi, int64_t nbins, int64_t p,
                       int64_t cbits, int64_t vb, int64_t ubits, double coef,
                       const uint64_t *direct, int64_t dbits, int64_t *res) {
    const uint64_t vshift = (uint64_t)(64 - cbits - vb);
    /* the half-word layout (dbits > 0): the offset's p bits and U's top ku = k1 - p bits
     * after the sign in the first half, the lines on the top min(ku, 16) of U's; the lines'
     * shift after the direct table's entries */
    const int64_t k1 = dbits > 0 ? 31 - dbits : 0;
    const int64_t ku = dbits > 0 ? k1 - p : 0;
    tab_t t = {
        .pack = pack, .thresh = thresh, .sel = sel, .trm1 = trm1, .direct = direct,
        .flo = flo, .fhi = fhi, .dbits = dbits,
        /* |v| < (nbins + 1) 2^p for the items the fast loops write (never the tail) */
        .vgrid = p < 40 && ((uint64_t)(nbins + 1) << p) <= (1ull << 51),
        .cshift = (uint64_t)(64 - cbits), .vshift = vshift, .vmask = (1ull << vb) - 1u,
        .lomask = (1ull << vshift) - 1u, .zshift = (uint64_t)(cbits + vb),
        .sshift = vshift - 1u, .oshift = vshift - 1u - (uint64_t)p,
        .omask = (1ull << p) - 1u, .umask = ~0ull >> (64 - ubits),
        .tshift = (uint64_t)(64 - ubits), .nbins = (uint64_t)nbins, .p = p, .law = law,
        .coef = coef, .uscale = ldexp(1.0, (int)-ubits),
        .hshift = (uint64_t)(32 - dbits), .k1 = (uint64_t)k1, .ku = (uint64_t)ku,
        .hus = (uint64_t)(ku > 16 ? ku - 16 : 0),
        .dqs = dbits > 0 ? direct[(size_t)1 << dbits] : 0u,
        .q = dbits > 0 ? (uint64_t)(cbits + vb - dbits) : 0u, .by_step = impl == 1,
        .rec = dbits > 0 ? NULL : direct, .ucut = (uint64_t)(ubits > 31 ? ubits - 31 : 0)};
    io_t io = {.x = x, .out = out, .fx = fx, .fout = fout, .fmt = fmt, .ginv = ginv, .g = g,
               .sat = sat, .simd = 0};
    half_t h = {.pos = pos, .hh = hh, .hv = hv};
    /* one-word layout: a word gives at most one cell, so stopping after hi - i words keeps
     * i <= hi; the half-word loops test i < hi themselves */
    int64_t lim = dbits > 0 || pos + (hi - i) > n ? n : pos + (hi - i);
    int64_t r;
#ifdef DPF_TABLE_AVX2
    if (impl == 0 && dpf_table_simd() == 2)
        r = dpf_table_fast_avx512(&t, &io, mode, fmt, b, &h, i, hi, lim, res);
    else if (impl == 0 && dpf_table_simd())
        r = dpf_table_fast_avx2(&t, &io, mode, fmt, b, &h, i, hi, lim, res);
    else
#endif
        r = fast_portable(&t, &io, mode, fmt, b, &h, i, hi, lim, res);
    res[6] = h.hh;
    res[7] = (int64_t)h.hv;
    return r;
}
