/* The envelope-table kernel's C common case (csrc/table.c, dpf_table_fast) timed alone:
 * bench/wide_loop_harness.py dumps a table's kernel arguments to a file and compiles this
 * file against a checkout's csrc/table.c (TABLE_C), so two checkouts can be compared on
 * the same tables without numba, the keystream or Python in the way.
 *
 * Usage: harness TABLE_FILE MODE REPS, MODE 1 (x + noise in place, int64), 2 (x + noise
 * into a separate int64 output), 3 (the float64 grid in place) or 4 (the float64 grid
 * into a separate output).  10^7 cells; the
 * keystream is a xorshift generator refilling a 2048-word buffer (the kernels' refill
 * size), whose cost is part of every figure.  A word the C loop leaves to the general
 * loop is skipped.  Prints the median of REPS timings in milliseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include TABLE_C

static uint64_t s0 = 0x9E3779B97F4A7C15ull, s1 = 0xD1B54A32D192ED03ull;

static inline uint64_t xorshift(void) {
    uint64_t a = s0, b = s1;
    s0 = b;
    a ^= a << 23;
    s1 = a ^ b ^ (a >> 17) ^ (b >> 26);
    return s1 + b;
}

static void *load(FILE *f, long n) {
    void *p = aligned_alloc(64, ((size_t)n * 8 + 63) / 64 * 64 + 64);
    if (!p || fread(p, 8, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "harness: short table file\n");
        exit(2);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s TABLE_FILE MODE REPS\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    int mode = atoi(argv[2]);
    const int reps = atoi(argv[3]);
    if (!f || reps < 1 || reps > 64 || (mode != 1 && mode != 2 && mode != 3 && mode != 4)) return 2;
    const int sep = mode == 4 || mode == 2;
    if (mode == 4) mode = 3;
    if (mode == 2) mode = 1;
    int64_t h[14];
    double coef, g;
    if (fread(h, 8, 14, f) != 14 || fread(&coef, 8, 1, f) != 1 || fread(&g, 8, 1, f) != 1)
        return 2;
    const uint64_t *pack = load(f, h[7]), *thresh = load(f, h[8]), *sel = load(f, h[9]);
    const uint64_t *trm1 = load(f, h[10]);
    const double *flo = load(f, h[11]), *fhi = load(f, h[12]);
    const uint64_t *direct = load(f, h[13]);
    const int64_t n = 10000000, nb = 2048;
    double *xd = aligned_alloc(64, n * 8), *od = aligned_alloc(64, n * 8);
    int64_t *xi = aligned_alloc(64, n * 8), *oi = aligned_alloc(64, n * 8);
    uint64_t *b = aligned_alloc(64, nb * 8);
    for (int64_t k = 0; k < n; k++) {
        xd[k] = (double)(k % 1000) * 0.37;
        xi[k] = k % 1000;
        od[k] = 1.0;
        oi[k] = 1;
    }
    double ms[64];
    int64_t res[8];
    for (int r = 0; r < reps; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int64_t i = 0;
        while (i < n) {
            for (int64_t k = 0; k < nb; k++) b[k] = xorshift();
            int64_t pos = 0;
            while (pos < nb && i < n) {
                dpf_table_fast(0, h[0], b, nb, pos, 0, 0, i, n, xi, sep ? oi : xi, xd, sep ? od : xd,
                               mode == 3 ? DPF_TABLE_F64 : 0, mode, 1.0 / g, g, 1.79e308, pack,
                               thresh, sel, trm1, flo, fhi, h[1], h[2], h[3], h[4], h[5], coef,
                               direct, h[6], res);
                pos = res[0];
                i = res[1];
                if (pos < nb && i < n) pos++; /* the general loop's word: skipped */
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ms[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    }
    for (int a = 0; a < reps; a++)
        for (int c = a + 1; c < reps; c++)
            if (ms[c] < ms[a]) {
                const double tmp = ms[a];
                ms[a] = ms[c];
                ms[c] = tmp;
            }
    printf("%.3f\n", ms[reps / 2]);
    return 0;
}
