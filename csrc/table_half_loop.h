/* The direct table's half-word loop (run_halves) as a template: included by
 * csrc/table_avx2.c once per build, with HL_NAME (the function), HL_TARGET (its target
 * attribute), HL_HALVES (halves decided per group: 4 with AVX2, 8 with AVX-512F; two
 * halves a word), HL_CTX / HL_INIT(c, t, io) (the group's constants),
 * HL_ENTRIES(c, w) (the direct-table entries of the halves of words w[0..HL_HALVES/2), an
 * HL_ETYPE; HL_EZERO a zero one), HL_GROUP(c, io, mode, fmt, w, e, i, wide, cnt) (the
 * proposals of those halves, e their entries: returns how many halves, from the first,
 * its thresholds decide (HL_HALVES: all), writing the accepted values of those to cells
 * i.. and their count to *cnt, or -1 when an in-place addition overflows, nothing
 * written) and HL_PIPE (1: the entries of the next group are loaded while this group is
 * decided, so the table's load latency overlaps the decisions; 0: each group loads its
 * own).  Not a header of its own: no include guard.
 *
 * The loop takes HL_HALVES halves at a time from whole words (aligned: no saved half).
 * When every half of a group is decided (accepted or rejected), its accepted values are
 * written and the loop goes on; a group with an undecided half in it (an undecided item,
 * the tail item, U between the thresholds) has the proposals before it written, then that
 * one (and any up to a whole word) goes through half_steps, which takes the same
 * decisions; an overflow or a grid value outside the vector conversion's range sends the
 * whole group there. */
static inline __attribute__((always_inline, target(HL_TARGET))) int64_t HL_NAME(
    const tab_t *t, const io_t *io, int64_t mode, int64_t fmt, const uint64_t *b, half_t *hp,
    int64_t i, int64_t hi, int64_t lim, int64_t *res, const int wide) {
    /* grid: v converts exactly through the 2^52 + 2^51 bias when |v| < 2^51 */
    const int vgrid = mode == MODE_GRID && t->vgrid;
    if (t->dbits == 0 || (mode == MODE_GRID && !vgrid))
        return run_loop(t, io, mode, fmt, b, hp, i, hi, lim, res);
    /* a local copy: the stores to out cannot alias it, so it stays in registers */
    half_t hl = *hp;
    half_t *h = &hl;
    int64_t r;
    HL_CTX c;
    HL_INIT(&c, t, io);
#if HL_PIPE
    HL_ETYPE enext = HL_EZERO;
    int64_t epos = -1;
#endif
    for (;;) {
        if (h->hh) { /* the saved half first, one proposal at a time */
            r = half_steps(t, io, mode, fmt, b, h, &i, hi, h->pos, lim, res, wide);
            if (r != GO_ON) {
                *hp = hl;
                return r - 2;
            }
            if (h->hh) break; /* no cell left */
        }
        if (h->pos + HL_HALVES / 2 > lim || i + HL_HALVES > hi) break;
        const uint64_t *const w = b + h->pos;
        int cnt;
#if HL_PIPE
        /* the next group's entries loaded a group ahead (their loads start while this
         * group's decisions wait), unless a step in between moved the position */
        const HL_ETYPE e = epos == h->pos ? enext : HL_ENTRIES(&c, w);
        if (h->pos + HL_HALVES <= lim) {
            enext = HL_ENTRIES(&c, w + HL_HALVES / 2);
            epos = h->pos + HL_HALVES / 2;
        }
        const int nvalid = HL_GROUP(&c, io, mode, fmt, w, e, i, wide, &cnt);
#else
        const int nvalid = HL_GROUP(&c, io, mode, fmt, w, HL_ENTRIES(&c, w), i, wide, &cnt);
#endif
        if (nvalid >= 0) {
            i += cnt;
            if (__builtin_expect(nvalid == HL_HALVES, 1)) {
                h->pos += HL_HALVES / 2;
                continue;
            }
            /* the undecided half next: its proposal (and any up to a whole word) one by
             * one; an undecided low half is saved */
            if (nvalid & 1) {
                h->hh = 1;
                h->hv = w[nvalid >> 1] & 0xFFFFFFFFu;
            }
            h->pos += (nvalid + 1) >> 1;
            r = half_steps(t, io, mode, fmt, b, h, &i, hi, h->pos + (h->hh ? 0 : 1), lim, res,
                           wide);
        } else { /* an overflow: the group proposal by proposal */
            r = half_steps(t, io, mode, fmt, b, h, &i, hi, h->pos + HL_HALVES / 2, lim, res,
                           wide);
        }
        if (r != GO_ON) {
            *hp = hl;
            return r - 2;
        }
    }
    r = run_loop(t, io, mode, fmt, b, h, i, hi, lim, res);
    *hp = hl;
    return r;
}
