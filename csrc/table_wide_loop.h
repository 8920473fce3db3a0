/* The wide loop (run_wide) as a template: included by csrc/table_avx2.c once per build,
 * with WL_NAME (the function), WL_TARGET (its target attribute), WL_LANES (words decided
 * per group: 4 with AVX2, 8 with AVX-512F), WL_CTX / WL_INIT (the group's constants) and
 * WL_GROUP(c, b, pos, dst, kept) (the group's decisions: returns how many of its words,
 * from the first, are decided, writes the accepted values of those in order to dst and
 * their count to *kept) and WL_STORE(io, mode, fmt, i, src) (WL_LANES values to cells
 * i..: returns WL_LANES, or how many of them were written before an in-place addition
 * that overflows).  Not a header of its own: no include guard. */
/* The step loop of a table without a direct table, on an AVX2 CPU: the decisions
 * WL_LANES words at a time (WL_GROUP; the accepted values kept in order in a batch of
 * WIDE_BATCH), a word the group leaves through step(), which takes the same decisions on the same words (it
 * may read the next word on a tie); the values written to their cells WL_LANES at a time
 * at a fixed stride (WL_STORE), one batch behind the decisions: while a batch is decided,
 * the one before it is written, WL_LANES cells per group (two independent streams of work, and
 * no value read back right after its store), the rest of it after -- except for a float
 * grid written in place, where each batch is written right after its decisions (measured
 * faster there).  A proposal gives at most one value and lim keeps the words below the
 * cells left, so every batch fits.  An in-place addition that overflows: redo() from that
 * batch's first word.  Grid stores need t->vgrid (|v| < 2^51: none fails). */
static inline __attribute__((always_inline, target(WL_TARGET))) int64_t WL_NAME(
    const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, int along, const uint64_t *b,
    int64_t pos, int64_t i, int64_t lim, int64_t *res) {
    WL_CTX c;
    WL_INIT(&c, t);
    int64_t bufs[2][WIDE_BATCH + WL_LANES] __attribute__((aligned(64)));
    int64_t *cur = bufs[0], *prev = bufs[1];
    int pcnt = 0, pdone = 0; /* the previous batch: its values, and those written */
    int64_t pstart = pos, pi = i; /* ... its first word and first cell */
    for (;;) {
        const int64_t start = pos;
        int cnt = 0, stop = 0;
        while (cnt <= WIDE_BATCH - WL_LANES && pos < lim) {
            if (pos + WL_LANES <= lim) {
                int kept;
                const int n = WL_GROUP(&c, b, pos, cur + cnt, &kept);
                cnt += kept;
                if (along && pdone + WL_LANES <= pcnt) {
                    const int w = WL_STORE(io, mode, fmt, pi + pdone, prev + pdone);
                    if (w < WL_LANES)
                        return redo(t, io, mode, fmt, b, pstart, lim, pi, pdone + w, res);
                    pdone += WL_LANES;
                }
                if (__builtin_expect(n == WL_LANES, 1)) {
                    pos += WL_LANES;
                    continue;
                }
                pos += n;
            }
            int64_t v = 0, s2 = 0, item = 0;
            uint64_t ux = 0;
            const int r = step(t, b, &pos, lim, &v, &s2, &item, &ux);
            if (r == STEP_STOP) {
                stop = 1;
                break;
            }
            if (r == STEP_ACCEPT) cur[cnt++] = v;
        }
        /* the previous batch's rest, then this batch becomes the previous one; at the end
         * (a stop, or the words ran out) it is written too */
        const int end = stop || pos >= lim;
        if (!along) { /* this batch now (cur is always the first buffer here) */
            int k = 0;
            for (; k + WL_LANES <= cnt; k += WL_LANES) {
                const int w = WL_STORE(io, mode, fmt, pi + k, cur + k);
                if (w < WL_LANES) return redo(t, io, mode, fmt, b, start, lim, pi, k + w, res);
            }
            for (; k + 4 <= cnt; k += 4)
                if (!store4(io, mode, fmt, pi + k, _mm256_load_si256((const __m256i *)(cur + k))))
                    return redo(t, io, mode, fmt, b, start, lim, pi, k, res);
            for (; k < cnt; k++)
                if (store(io, mode, fmt, pi + k, cur[k]) != 1)
                    return redo(t, io, mode, fmt, b, start, lim, pi, k, res);
            pi += cnt;
            if (end) return finish(res, pos, pi, 1, 0, 0, 0, 0);
            continue;
        }
        for (int last = 0; last <= end; last++) {
            for (; pdone + WL_LANES <= pcnt; pdone += WL_LANES) {
                const int w = WL_STORE(io, mode, fmt, pi + pdone, prev + pdone);
                if (w < WL_LANES)
                    return redo(t, io, mode, fmt, b, pstart, lim, pi, pdone + w, res);
            }
            for (; pdone + 4 <= pcnt; pdone += 4)
                if (!store4(io, mode, fmt, pi + pdone,
                            _mm256_load_si256((const __m256i *)(prev + pdone))))
                    return redo(t, io, mode, fmt, b, pstart, lim, pi, pdone, res);
            for (; pdone < pcnt; pdone++)
                if (store(io, mode, fmt, pi + pdone, prev[pdone]) != 1)
                    return redo(t, io, mode, fmt, b, pstart, lim, pi, pdone, res);
            int64_t *tmp = prev;
            prev = cur;
            cur = tmp;
            pi += pcnt;
            pcnt = cnt;
            pdone = 0;
            pstart = start;
            cnt = 0;
        }
        if (end) return finish(res, pos, pi, 1, 0, 0, 0, 0);
    }
}

