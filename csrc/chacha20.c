/* ChaCha20 block function, RFC 8439 section 2.3, 8 or 16 blocks at a time.
 *
 * Each 32-bit state word is held as an L-lane vector (one lane per block, L = 8 or 16),
 * so the quarter-rounds are plain lane-wise adds, xors and rotates written once with
 * GCC vector extensions (DEFINE_BLOCKS).  The same source is compiled several times:
 *   - 8 lanes, portable (SSE2 on x86-64, the baseline; one set of 8 blocks); the
 *     target("avx2") clone runs its rounds in inline assembly on x86-64 with GCC or Clang
 *     (blocks8_avx2: the state held in registers), elsewhere the same macro with two sets;
 *   - 16 lanes, two sets, portable (any CPU: tested for equality everywhere) and
 *     target("avx512f") (rotates become vprold), chosen at run time with
 *     __builtin_cpu_supports.  No -march flags.
 * The environment variable DPFAST_SIMD ("avx2", "portable"; read once) caps the path
 * chosen, e.g. to measure the AVX2 path on an AVX-512 host.
 */
#include <stdlib.h>
#include <string.h>

#include "dpfast.h"

typedef uint32_t v8u __attribute__((vector_size(32)));
typedef uint8_t v32b __attribute__((vector_size(32)));
typedef uint32_t v16u __attribute__((vector_size(64)));

#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
/* Rotations by 16 and 8 bits are byte permutations within each 32-bit lane. */
#define ROT16_MASK                                                                 \
    (v32b){2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,                    \
           18, 19, 16, 17, 22, 23, 20, 21, 26, 27, 24, 25, 30, 31, 28, 29}
#define ROT8_MASK                                                                  \
    (v32b){3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,                    \
           19, 16, 17, 18, 23, 20, 21, 22, 27, 24, 25, 26, 31, 28, 29, 30}
#define VROT16(v) ((v8u)__builtin_shuffle((v32b)(v), ROT16_MASK))
#define VROT8(v) ((v8u)__builtin_shuffle((v32b)(v), ROT8_MASK))
#define QR(a, b, c, d)                   \
    a += b; d ^= a; d = ROTL(d, 16);     \
    c += d; b ^= c; b = ROTL(b, 12);     \
    a += b; d ^= a; d = ROTL(d, 8);      \
    c += d; b ^= c; b = ROTL(b, 7);

static const uint32_t SIGMA[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};

/* 8x8 transpose of 32-bit lanes (unpack 32, unpack 64, swap 128-bit halves): row i of
 * the input holds state word i of 8 blocks; column j (block j) is stored to
 * out + 16 j.  Compiles to vpunpck / vperm2i128 with AVX2, to SSE shuffles otherwise. */
#define SHUF(a, b, ...) __builtin_shuffle((a), (b), (v8u){__VA_ARGS__})
#define TRANSPOSE_STORE(r, out)                                                    \
    do {                                                                           \
        v8u t_[8], u_[8], c_;                                                      \
        for (int i_ = 0; i_ < 8; i_ += 2) {                                        \
            t_[i_] = SHUF((r)[i_], (r)[i_ + 1], 0, 8, 1, 9, 4, 12, 5, 13);         \
            t_[i_ + 1] = SHUF((r)[i_], (r)[i_ + 1], 2, 10, 3, 11, 6, 14, 7, 15);   \
        }                                                                          \
        for (int h_ = 0; h_ < 8; h_ += 4) {                                        \
            u_[h_] = SHUF(t_[h_], t_[h_ + 2], 0, 1, 8, 9, 4, 5, 12, 13);           \
            u_[h_ + 1] = SHUF(t_[h_], t_[h_ + 2], 2, 3, 10, 11, 6, 7, 14, 15);     \
            u_[h_ + 2] = SHUF(t_[h_ + 1], t_[h_ + 3], 0, 1, 8, 9, 4, 5, 12, 13);   \
            u_[h_ + 3] = SHUF(t_[h_ + 1], t_[h_ + 3], 2, 3, 10, 11, 6, 7, 14, 15); \
        }                                                                          \
        for (int j_ = 0; j_ < 4; j_++) {                                           \
            c_ = SHUF(u_[j_], u_[j_ + 4], 0, 1, 2, 3, 8, 9, 10, 11);               \
            memcpy((out) + 16 * j_, &c_, sizeof c_);                               \
            c_ = SHUF(u_[j_], u_[j_ + 4], 4, 5, 6, 7, 12, 13, 14, 15);             \
            memcpy((out) + 16 * (j_ + 4), &c_, sizeof c_);                         \
        }                                                                          \
    } while (0)

/* The quarter-round on two independent sets of rows at once, step by step: a double
 * round of one set is a chain of dependent one-cycle operations about as long as the
 * time its operations take to issue, so a second set fills the slots the first leaves
 * idle (the 8-block AVX2 kernel alone ran at about 0.9x OpenSSL's, two sets at par). */
#define QR2(R16, R8, a, b, c, d, A, B, C, D)                                         \
    a += b; A += B; d ^= a; D ^= A; d = R16(d); D = R16(D);                         \
    c += d; C += D; b ^= c; B ^= C; b = ROTL(b, 12); B = ROTL(B, 12);               \
    a += b; A += B; d ^= a; D ^= A; d = R8(d); D = R8(D);                           \
    c += d; C += D; b ^= c; B ^= C; b = ROTL(b, 7); B = ROTL(B, 7);
#define QR1(R16, R8, a, b, c, d)                                                    \
    a += b; d ^= a; d = R16(d);                                                     \
    c += d; b ^= c; b = ROTL(b, 12);                                                \
    a += b; d ^= a; d = R8(d);                                                      \
    c += d; b ^= c; b = ROTL(b, 7);
#define ROT16_SHIFT(v) ROTL(v, 16)
#define ROT8_SHIFT(v) ROTL(v, 8)

/* 20 rounds on one set of rows x, or on two sets x and y. */
#define ROUNDS1(R16, R8, x)                                                          \
    for (int r_ = 0; r_ < 10; r_++) {                                                \
        QR1(R16, R8, x[0], x[4], x[8], x[12]);                                       \
        QR1(R16, R8, x[1], x[5], x[9], x[13]);                                       \
        QR1(R16, R8, x[2], x[6], x[10], x[14]);                                      \
        QR1(R16, R8, x[3], x[7], x[11], x[15]);                                      \
        QR1(R16, R8, x[0], x[5], x[10], x[15]);                                      \
        QR1(R16, R8, x[1], x[6], x[11], x[12]);                                      \
        QR1(R16, R8, x[2], x[7], x[8], x[13]);                                       \
        QR1(R16, R8, x[3], x[4], x[9], x[14]);                                       \
    }
#define ROUNDS2(R16, R8, x, y)                                                       \
    for (int r_ = 0; r_ < 10; r_++) {                                                \
        QR2(R16, R8, x[0], x[4], x[8], x[12], y[0], y[4], y[8], y[12]);              \
        QR2(R16, R8, x[1], x[5], x[9], x[13], y[1], y[5], y[9], y[13]);              \
        QR2(R16, R8, x[2], x[6], x[10], x[14], y[2], y[6], y[10], y[14]);            \
        QR2(R16, R8, x[3], x[7], x[11], x[15], y[3], y[7], y[11], y[15]);            \
        QR2(R16, R8, x[0], x[5], x[10], x[15], y[0], y[5], y[10], y[15]);            \
        QR2(R16, R8, x[1], x[6], x[11], x[12], y[1], y[6], y[11], y[12]);            \
        QR2(R16, R8, x[2], x[7], x[8], x[13], y[2], y[7], y[8], y[13]);              \
        QR2(R16, R8, x[3], x[4], x[9], x[14], y[3], y[4], y[9], y[14]);              \
    }

/* Store the 16 rows of 8 blocks (block j = lane j) to out + 16 j. */
#define STORE8(x, out)                                                               \
    do {                                                                             \
        TRANSPOSE_STORE(x, out);                                                     \
        TRANSPOSE_STORE(x + 8, (out) + 8);                                           \
    } while (0)
/* 16 blocks: a 16x16 transpose of 32-bit lanes in four stages of two-source shuffles
 * (unpack 32, unpack 64 within 128-bit lanes, then two exchanges of 128-bit lanes:
 * vpunpck* and vshufi32x4 with AVX-512F, 64 shuffles for 16 blocks), after which vector
 * j is block j, stored whole (one 64-byte store: a cache line when out is aligned).
 * Stage 2 leaves in 128-bit lane L of u[4g + m] the words 4g..4g+3 of block 4L + m. */
#define SHUF16(a, b, ...) __builtin_shuffle((a), (b), (v16u){__VA_ARGS__})
#define LO32 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29
#define HI32 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31
#define LO64 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define HI64 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define L0202 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27
#define L1313 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31
#define STORE16(x, out)                                                              \
    do {                                                                             \
        v16u t_[16], u_[16], v_, w_, c_;                                             \
        for (int i_ = 0; i_ < 16; i_ += 2) {                                         \
            t_[i_] = SHUF16((x)[i_], (x)[i_ + 1], LO32);                             \
            t_[i_ + 1] = SHUF16((x)[i_], (x)[i_ + 1], HI32);                         \
        }                                                                            \
        for (int g_ = 0; g_ < 16; g_ += 4) {                                         \
            u_[g_] = SHUF16(t_[g_], t_[g_ + 2], LO64);                               \
            u_[g_ + 1] = SHUF16(t_[g_], t_[g_ + 2], HI64);                           \
            u_[g_ + 2] = SHUF16(t_[g_ + 1], t_[g_ + 3], LO64);                       \
            u_[g_ + 3] = SHUF16(t_[g_ + 1], t_[g_ + 3], HI64);                       \
        }                                                                            \
        for (int m_ = 0; m_ < 4; m_++) {                                             \
            for (int h_ = 0; h_ < 2; h_++) { /* h_ 0: lanes L 0, 2; 1: lanes 1, 3 */ \
                v_ = h_ ? SHUF16(u_[m_], u_[m_ + 4], L1313)                          \
                        : SHUF16(u_[m_], u_[m_ + 4], L0202);                         \
                w_ = h_ ? SHUF16(u_[m_ + 8], u_[m_ + 12], L1313)                     \
                        : SHUF16(u_[m_ + 8], u_[m_ + 12], L0202);                    \
                c_ = SHUF16(v_, w_, L0202); /* block 4 h_ + m_ */                    \
                memcpy((out) + 16 * (4 * h_ + m_), &c_, sizeof c_);                  \
                c_ = SHUF16(v_, w_, L1313); /* block 8 + 4 h_ + m_ */                \
                memcpy((out) + 16 * (8 + 4 * h_ + m_), &c_, sizeof c_);              \
            }                                                                        \
        }                                                                            \
    } while (0)

/* Output of at least this many blocks (64 KiB) is written to lines that are mostly not
 * in the core's caches: the kernels then prefetch, for writing (prefetchw), the lines of
 * the next group while the rounds of this one run, so that the read-for-ownership of
 * each line overlaps the arithmetic instead of stalling the group's stores.  On a Xeon
 * (Emerald Rapids) AVX-512 host it took the 16-lane path from 0.92-0.95x to 1.00-1.02x
 * OpenSSL's ChaCha20 on 16 MiB calls (bench/bench_keystream.py); the kernels' 16 KiB
 * refills, which stay in cache, are below the threshold and unchanged.  prefetchw is a
 * hint (executed as a no-op by x86-64 cores that do not implement it). */
#define PREFETCH_MIN_BLOCKS 1024

/* A kernel computing the first floor(nblocks / L) * L blocks from counter (L = lanes of
 * V, one block per lane) and returning how many it wrote.  The state rows are set up
 * once per call; with SETS 2, two groups of L blocks go through the rounds together
 * (then at most one group alone).  The caller ensures the counter does not wrap. */
#define DEFINE_BLOCKS(NAME, ATTR, V, L, SETS, R16, R8, STORE, ...)                  \
    ATTR static uint64_t NAME(const uint32_t *key, const uint32_t *nonce,            \
                              uint32_t counter, uint64_t nblocks, uint32_t *out) {   \
        V s[16];                                                                     \
        uint64_t b = 0;                                                              \
        const int far = nblocks >= PREFETCH_MIN_BLOCKS;                              \
        for (int i = 0; i < 4; i++) s[i] = (V){0} + SIGMA[i];                        \
        for (int i = 0; i < 8; i++) s[4 + i] = (V){0} + key[i];                      \
        s[12] = (V){__VA_ARGS__} + counter;                                          \
        for (int i = 0; i < 3; i++) s[13 + i] = (V){0} + nonce[i];                   \
        for (; SETS == 2 && b + 2 * (L) <= nblocks; b += 2 * (L)) {                  \
            V x[16], y[16];                                                          \
            if (far && b + 4 * (L) <= nblocks)                                       \
                for (int i = 0; i < 2 * (L); i++)                                    \
                    __builtin_prefetch(out + 16 * (b + 2 * (L) + i), 1, 3);          \
            for (int i = 0; i < 16; i++) x[i] = y[i] = s[i];                         \
            y[12] += (L);                                                            \
            ROUNDS2(R16, R8, x, y)                                                   \
            for (int i = 0; i < 16; i++) {                                           \
                x[i] += s[i];                                                        \
                y[i] += s[i];                                                        \
            }                                                                        \
            y[12] += (L);                                                            \
            STORE(x, out + 16 * b);                                                  \
            STORE(y, out + 16 * (b + (L)));                                          \
            s[12] += 2 * (L);                                                        \
        }                                                                            \
        for (; b + (L) <= nblocks; b += (L)) {                                       \
            V x[16];                                                                 \
            for (int i = 0; i < 16; i++) x[i] = s[i];                                \
            ROUNDS1(R16, R8, x)                                                      \
            for (int i = 0; i < 16; i++) x[i] += s[i];                               \
            STORE(x, out + 16 * b);                                                  \
            s[12] += (L);                                                            \
        }                                                                            \
        return b;                                                                    \
    }

#define LANES8 0, 1, 2, 3, 4, 5, 6, 7
#define LANES16 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
#define NO_ATTR

/* 8 lanes: AVX2 (next) and portable (SSE2 on x86-64, one set: the fallback's registers
 * hold one set at most).  16 lanes: AVX-512F (two sets, 32 zmm registers hold both;
 * rotations are vprold) and its portable clone (same source, tested on every machine). */
#if defined(__x86_64__) && defined(__GNUC__)
/* AVX2, 8 blocks (one per 32-bit lane of a ymm register), the rounds in inline assembly
 * so that the state stays in registers: 15 of the 16 rows are held in ymm0-ymm10 and
 * ymm12-ymm15 for all 20 rounds, row 11 (a word of the c row) lives in memory, ymm11 is
 * the one temporary (register renaming makes its reuse free), and the rotation masks are
 * memory operands of vpshufb.  The four quarter-rounds of a round are interleaved step by
 * step (four independent chains); the input rows are loaded, and added back at the end,
 * straight from the state s.  The vector-extension kernel with two sets of 8 blocks (the
 * #else branch), which the compiler spills to the stack (about 50 stores and 50 loads per
 * double round of 16 blocks), ran 2-4% slower on an idle core and 10-20% slower while
 * the core's other hyperthread was busy: this one issues about 14% fewer instructions per
 * block (per double round, 4 loads and 4 stores of row 11 besides the masks' operands). */
#define Y_(n) "%%ymm" #n
#define YT_ Y_(11)
#define CMEM_ "64(%[m])" /* row 11 */
#define ROTL_ASM(b, L, R)                                                               \
    "vpslld $" L ", " b ", " YT_ "\n\t"                                                 \
    "vpsrld $" R ", " b ", " b "\n\t"                                                   \
    "vpor " YT_ ", " b ", " b "\n\t"
/* Half of four quarter-rounds: a += b; d ^= a; d <<<= 16 (or 8); c += d; b ^= c;
 * b <<<= 12 (or 7).  The first three quarter-rounds' rows are registers; the fourth's c
 * is row 11 in memory (read into the temporary, written back, xored into b). */
#define HALF4(a0, b0, c0, d0, a1, b1, c1, d1, a2, b2, c2, d2, a3, b3, d3, MASK, L, R)  \
    "vpaddd " b0 ", " a0 ", " a0 "\n\t"                                                \
    "vpaddd " b1 ", " a1 ", " a1 "\n\t"                                                \
    "vpaddd " b2 ", " a2 ", " a2 "\n\t"                                                \
    "vpaddd " b3 ", " a3 ", " a3 "\n\t"                                                \
    "vpxor " a0 ", " d0 ", " d0 "\n\t"                                                 \
    "vpxor " a1 ", " d1 ", " d1 "\n\t"                                                 \
    "vpxor " a2 ", " d2 ", " d2 "\n\t"                                                 \
    "vpxor " a3 ", " d3 ", " d3 "\n\t"                                                 \
    "vpshufb " MASK ", " d0 ", " d0 "\n\t"                                             \
    "vpshufb " MASK ", " d1 ", " d1 "\n\t"                                             \
    "vpshufb " MASK ", " d2 ", " d2 "\n\t"                                             \
    "vpshufb " MASK ", " d3 ", " d3 "\n\t"                                             \
    "vpaddd " CMEM_ ", " d3 ", " YT_ "\n\t"                                            \
    "vmovdqa " YT_ ", " CMEM_ "\n\t"                                                   \
    "vpxor " YT_ ", " b3 ", " b3 "\n\t"                                                \
    "vpaddd " d0 ", " c0 ", " c0 "\n\t"                                                \
    "vpaddd " d1 ", " c1 ", " c1 "\n\t"                                                \
    "vpaddd " d2 ", " c2 ", " c2 "\n\t"                                                \
    "vpxor " c0 ", " b0 ", " b0 "\n\t"                                                 \
    "vpxor " c1 ", " b1 ", " b1 "\n\t"                                                 \
    "vpxor " c2 ", " b2 ", " b2 "\n\t"                                                 \
    ROTL_ASM(b0, L, R) ROTL_ASM(b1, L, R) ROTL_ASM(b2, L, R) ROTL_ASM(b3, L, R)
#define QR4_ASM(...)                                                                    \
    HALF4(__VA_ARGS__, "0(%[m])", "12", "20") HALF4(__VA_ARGS__, "32(%[m])", "7", "25")

/* x[i] = s[i] + (20 rounds of s)[i] for the 16 rows (32-byte aligned); m[0], m[1]: the
 * rotation masks, m[2]: scratch for row 11. */
#define LOAD_ROW(i, r) "vmovdqa " #i "*32(%[s]), " Y_(r) "\n\t"
#define ADD_STORE_ROW(i, r)                                                             \
    "vpaddd " #i "*32(%[s]), " Y_(r) ", " Y_(r) "\n\t"                                  \
    "vmovdqa " Y_(r) ", " #i "*32(%[x])\n\t"
__attribute__((target("avx2"))) static void rounds8_avx2(v8u *x, const v8u *s, v8u *m) {
    uint64_t n = 10;
    m[2] = s[11];
    __asm__ volatile(
        LOAD_ROW(0, 0) LOAD_ROW(1, 1) LOAD_ROW(2, 2) LOAD_ROW(3, 3)
        LOAD_ROW(4, 4) LOAD_ROW(5, 5) LOAD_ROW(6, 6) LOAD_ROW(7, 7)
        LOAD_ROW(8, 8) LOAD_ROW(9, 9) LOAD_ROW(10, 10)
        LOAD_ROW(12, 12) LOAD_ROW(13, 13) LOAD_ROW(14, 14) LOAD_ROW(15, 15)
        ".p2align 4\n"
        "1:\n\t"
        /* columns (0,4,8,12) (1,5,9,13) (2,6,10,14) (3,7,11,15) */
        QR4_ASM(Y_(0), Y_(4), Y_(8), Y_(12), Y_(1), Y_(5), Y_(9), Y_(13),
                Y_(2), Y_(6), Y_(10), Y_(14), Y_(3), Y_(7), Y_(15))
        /* diagonals (0,5,10,15) (2,7,8,13) (3,4,9,14) (1,6,11,12) */
        QR4_ASM(Y_(0), Y_(5), Y_(10), Y_(15), Y_(2), Y_(7), Y_(8), Y_(13),
                Y_(3), Y_(4), Y_(9), Y_(14), Y_(1), Y_(6), Y_(12))
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        ADD_STORE_ROW(0, 0) ADD_STORE_ROW(1, 1) ADD_STORE_ROW(2, 2) ADD_STORE_ROW(3, 3)
        ADD_STORE_ROW(4, 4) ADD_STORE_ROW(5, 5) ADD_STORE_ROW(6, 6) ADD_STORE_ROW(7, 7)
        ADD_STORE_ROW(8, 8) ADD_STORE_ROW(9, 9) ADD_STORE_ROW(10, 10)
        "vmovdqa " CMEM_ ", " Y_(11) "\n\t"
        ADD_STORE_ROW(11, 11)
        ADD_STORE_ROW(12, 12) ADD_STORE_ROW(13, 13) ADD_STORE_ROW(14, 14)
        ADD_STORE_ROW(15, 15)
        : [n] "+r"(n)
        : [x] "r"(x), [s] "r"(s), [m] "r"(m)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
}

__attribute__((target("avx2,prfchw"))) static uint64_t blocks8_avx2(const uint32_t *key,
                                                              const uint32_t *nonce,
                                                              uint32_t counter,
                                                              uint64_t nblocks,
                                                              uint32_t *out) {
    v8u s[16], m[3], x[16];
    uint64_t b = 0;
    const int far = nblocks >= PREFETCH_MIN_BLOCKS;
    m[0] = (v8u)ROT16_MASK;
    m[1] = (v8u)ROT8_MASK;
    for (int i = 0; i < 4; i++) s[i] = (v8u){0} + SIGMA[i];
    for (int i = 0; i < 8; i++) s[4 + i] = (v8u){0} + key[i];
    s[12] = (v8u){LANES8} + counter;
    for (int i = 0; i < 3; i++) s[13 + i] = (v8u){0} + nonce[i];
    for (; b + 8 <= nblocks; b += 8) {
        if (far && b + 16 <= nblocks)
            for (int i = 0; i < 8; i++) __builtin_prefetch(out + 16 * (b + 8 + i), 1, 3);
        rounds8_avx2(x, s, m);
        STORE8(x, out + 16 * b);
        s[12] += 8;
    }
    return b;
}
#else
DEFINE_BLOCKS(blocks8_avx2, __attribute__((target("avx2"))), v8u, 8, 2, VROT16, VROT8,
              STORE8, LANES8)
#endif
DEFINE_BLOCKS(blocks8_generic, NO_ATTR, v8u, 8, 1, VROT16, VROT8, STORE8, LANES8)
DEFINE_BLOCKS(blocks16_avx512, __attribute__((target("avx512f,prfchw"))), v16u, 16, 2, ROT16_SHIFT,
              ROT8_SHIFT, STORE16, LANES16)
DEFINE_BLOCKS(blocks16_generic, NO_ATTR, v16u, 16, 2, ROT16_SHIFT, ROT8_SHIFT, STORE16,
              LANES16)

static void block1(const uint32_t *key, const uint32_t *nonce, uint32_t counter, uint32_t *out) {
    uint32_t x[16], s[16];
    for (int i = 0; i < 4; i++) s[i] = SIGMA[i];
    for (int i = 0; i < 8; i++) s[4 + i] = key[i];
    s[12] = counter;
    for (int i = 0; i < 3; i++) s[13 + i] = nonce[i];
    memcpy(x, s, sizeof x);
    for (int r = 0; r < 10; r++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) out[i] = x[i] + s[i];
}

typedef uint64_t (*blocks_fn)(const uint32_t *, const uint32_t *, uint32_t, uint64_t,
                              uint32_t *);

/* The cap set by DPFAST_SIMD (dpfast.h). */
int dpf_simd_cap(void) {
    const char *v = getenv("DPFAST_SIMD");
    if (!v) return 3;
    if (strcmp(v, "avx2") == 0) return 2;
    if (strcmp(v, "portable") == 0) return 1;
    return 3;
}

/* The widest path this CPU runs (within the cap): 16 lanes with AVX-512F, else 8 lanes
 * (AVX2 or portable).  Only a path whose instructions the CPU reports is returned. */
static blocks_fn pick_blocks8(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (dpf_simd_cap() >= 2 && __builtin_cpu_supports("avx2")) return blocks8_avx2;
#endif
    return blocks8_generic;
}

static blocks_fn pick_blocks16(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (dpf_simd_cap() >= 3 && __builtin_cpu_supports("avx512f")) return blocks16_avx512;
#endif
    return 0;
}

int dpf_chacha20_simd_level(void) {
    if (pick_blocks16()) return 3;
    return pick_blocks8() == blocks8_avx2 ? 2 : 1;
}

/* Blocks [0, nblocks) from counter: the wide kernel (if any) for its whole groups, the
 * 8-lane one for a group of 8 left over, the scalar block for the last 0..7. */
static void blocks_with(blocks_fn wide, blocks_fn fn8, const uint32_t *key,
                        const uint32_t *nonce, uint32_t counter, uint64_t nblocks,
                        uint32_t *out) {
    uint64_t i = 0;
    if (wide) i = wide(key, nonce, counter, nblocks, out);
    if (fn8) i += fn8(key, nonce, counter + (uint32_t)i, nblocks - i, out + 16 * i);
    for (; i < nblocks; i++) block1(key, nonce, counter + (uint32_t)i, out + 16 * i);
}

/* One implementation by number, for equality tests on any machine: 0 scalar, 1 portable
 * 8-lane, 2 AVX2 8-lane, 3 portable 16-lane, 4 AVX-512 16-lane.  Returns -1 (and writes
 * nothing) when this CPU cannot run the requested path. */
int dpf_chacha20_blocks_impl(int impl, const uint32_t *key, const uint32_t *nonce,
                             uint32_t counter, uint64_t nblocks, uint32_t *out) {
    blocks_fn fn = 0;
    switch (impl) {
        case 0: break;
        case 1: fn = blocks8_generic; break;
        case 2: if (pick_blocks8() != blocks8_avx2) return -1;
                fn = blocks8_avx2; break;
        case 3: fn = blocks16_generic; break;
        case 4: if (!pick_blocks16()) return -1;
                fn = blocks16_avx512; break;
        default: return -1;
    }
    blocks_with(fn, 0, key, nonce, counter, nblocks, out);
    return 0;
}

/* The kernels chosen once (a race between threads picks the same values). */
static blocks_fn chosen8, chosen16;
static int chosen;

static void choose(void) {
    if (__atomic_load_n(&chosen, __ATOMIC_ACQUIRE)) return;
    chosen8 = pick_blocks8();
    chosen16 = pick_blocks16();
    __atomic_store_n(&chosen, 1, __ATOMIC_RELEASE);
}

void dpf_chacha20_blocks(const uint32_t *key, const uint32_t *nonce, uint32_t counter,
                         uint64_t nblocks, uint32_t *out) {
    choose();
    blocks_with(chosen16, chosen8, key, nonce, counter, nblocks, out);
}

/* One block each of 16 different streams (lane j: nonce nonces[3j..3j+2], counter
 * counters[j]), block j stored to out + 16 j: the per-id streams of contribution
 * bounding need one block per id, and 16 lanes cost about what one scalar block does. */
#define DEFINE_STREAMS16(NAME, ATTR)                                                 \
    ATTR static void NAME(const uint32_t *key, const uint32_t *nonces,               \
                          const uint32_t *counters, uint32_t *out) {                 \
        v16u x[16], s[16];                                                           \
        for (int i = 0; i < 4; i++) s[i] = (v16u){0} + SIGMA[i];                     \
        for (int i = 0; i < 8; i++) s[4 + i] = (v16u){0} + key[i];                   \
        for (int j = 0; j < 16; j++) {                                               \
            s[12][j] = counters[j];                                                  \
            for (int i = 0; i < 3; i++) s[13 + i][j] = nonces[3 * j + i];            \
        }                                                                            \
        for (int i = 0; i < 16; i++) x[i] = s[i];                                    \
        ROUNDS1(ROT16_SHIFT, ROT8_SHIFT, x)                                          \
        for (int i = 0; i < 16; i++) x[i] += s[i];                                   \
        STORE16(x, out);                                                             \
    }

typedef void (*streams_fn)(const uint32_t *, const uint32_t *, const uint32_t *, uint32_t *);

DEFINE_STREAMS16(streams16_avx512, __attribute__((target("avx512f"))))
DEFINE_STREAMS16(streams16_generic, NO_ATTR)

/* AVX2: the 16 streams as two sets of 8 lanes, each through blocks8_avx2's register
 * rounds (elsewhere both sets through the vector-extension rounds together); a 16-lane
 * vector under target("avx2") is two ymm registers per state word: its 32 rows spilled to
 * the stack, and it ran at about the cost of 16 scalar blocks. */
__attribute__((target("avx2"))) static void streams16_avx2(const uint32_t *key,
                                                            const uint32_t *nonces,
                                                            const uint32_t *counters,
                                                            uint32_t *out) {
    v8u x[16], y[16], s[16], t[16];
    uint32_t w[4][16];
    for (int j = 0; j < 16; j++) {
        w[0][j] = counters[j];
        for (int i = 0; i < 3; i++) w[1 + i][j] = nonces[3 * j + i];
    }
    for (int i = 0; i < 4; i++) s[i] = t[i] = (v8u){0} + SIGMA[i];
    for (int i = 0; i < 8; i++) s[4 + i] = t[4 + i] = (v8u){0} + key[i];
    for (int i = 0; i < 4; i++) {
        memcpy(&s[12 + i], w[i], sizeof s[0]);
        memcpy(&t[12 + i], w[i] + 8, sizeof t[0]);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    v8u m[3];
    m[0] = (v8u)ROT16_MASK;
    m[1] = (v8u)ROT8_MASK;
    rounds8_avx2(x, s, m);
    rounds8_avx2(y, t, m);
#else
    for (int i = 0; i < 16; i++) {
        x[i] = s[i];
        y[i] = t[i];
    }
    ROUNDS2(VROT16, VROT8, x, y)
    for (int i = 0; i < 16; i++) {
        x[i] += s[i];
        y[i] += t[i];
    }
#endif
    STORE8(x, out);
    STORE8(y, out + 128);
}

void dpf_chacha20_streams(const uint32_t *key, const uint32_t *nonces, const uint32_t *counters,
                          uint64_t nstreams, uint64_t nblocks, uint32_t *out) {
    uint64_t s = 0;
    if (nblocks == 1) { /* one block per stream: 16 streams per call, lane-wise */
        choose();
        streams_fn fn = chosen16                    ? streams16_avx512
                        : chosen8 == blocks8_avx2 ? streams16_avx2
                                                  : streams16_generic;
        for (; s + 16 <= nstreams; s += 16) fn(key, nonces + 3 * s, counters + s, out + 16 * s);
    }
    for (; s < nstreams; s++)
        dpf_chacha20_blocks(key, nonces + 3 * s, counters[s], nblocks, out + s * nblocks * 16);
}

static uint32_t load32_le(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void store32_le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

void dpf_chacha20_keystream(const uint8_t *key, const uint8_t *nonce, uint32_t counter,
                            uint8_t *out, uint64_t nbytes) {
    uint32_t k[8], n[3], buf[16 * 16];
    for (int i = 0; i < 8; i++) k[i] = load32_le(key + 4 * i);
    for (int i = 0; i < 3; i++) n[i] = load32_le(nonce + 4 * i);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Little-endian words are the RFC's byte order: whole blocks go straight to out in
     * chunks (so a chunk stays in cache), without a staging copy. */
    while (nbytes >= 64 * 256) {
        if (((uintptr_t)out & 3u) != 0) break; /* unaligned: use the staged path */
        dpf_chacha20_blocks(k, n, counter, 256, (uint32_t *)(void *)out);
        out += 64 * 256;
        nbytes -= 64 * 256;
        counter += 256;
    }
#endif
    while (nbytes > 0) {
        uint64_t nb = (nbytes + 63) / 64;
        if (nb > 16) nb = 16;
        dpf_chacha20_blocks(k, n, counter, nb, buf);
        uint64_t take = nb * 64 < nbytes ? nb * 64 : nbytes;
        for (uint64_t w = 0; w < (take + 3) / 4; w++) {
            uint8_t tmp[4];
            store32_le(tmp, buf[w]);
            uint64_t m = take - 4 * w < 4 ? take - 4 * w : 4;
            memcpy(out + 4 * w, tmp, m);
        }
        out += take;
        nbytes -= take;
        counter += (uint32_t)nb;
    }
}
