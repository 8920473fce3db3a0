"""The one per-person bounding core (issue 37): ``dpfast._kernels.tables._bound_block``.

Every bounded statistic (count, value sums, the summand matrix, the quantile's kept rows)
keeps its rows through one per-id choice.  These tests check the choice against a
pure-Python reference of the policy (RFC 8439 keystream, Lemire's exact integers, partial
Fisher-Yates), the caps (at most ``k`` keys, ``c`` rows per key), that the outputs of the
different launches agree with each other, and that the choosing stays in one place.
"""

from __future__ import annotations

import ast
import pathlib
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast._kernels import quantile as kq
from dpfast._kernels import rows as kr
from dpfast._kernels import tables as kt
from dpfast.random.chacha import keystream

ROOT = pathlib.Path(__file__).resolve().parents[1]
M64 = (1 << 64) - 1

#: the per-id choosing helpers: the policy (uniform / most frequent), the partial
#: Fisher-Yates shuffle, the per-id stream addressing and the two choices built on them
CHOOSERS = {"_shuffle_from", "_most_frequent", "_set_nonce", "_want", "_choose_rows",
            "_choose_keys"}


# ----------------------------------------------------------------------------- reference
class _Stream:
    """The id's stream ``(h, purpose)`` under ``skey`` as 64-bit words, drawn lazily."""

    def __init__(self, skey: np.ndarray, h: int, purpose: int) -> None:
        self.key = skey.astype("<u4").tobytes()
        self.stream = h + (purpose << 64)
        self.words: list[int] = []
        self.pos = 0

    def u64(self) -> int:
        if self.pos == len(self.words):
            block = len(self.words) // 8
            raw = keystream(self.key, self.stream, 64 * 8, counter=block)
            self.words += list(struct.unpack("<64Q", raw))
        self.pos += 1
        return self.words[self.pos - 1]

    def below(self, span: int) -> int:
        """Lemire's exactly uniform integer in [0, span)."""
        m = self.u64() * span
        if m & M64 < span:
            thr = ((1 << 64) - span) % span
            while m & M64 < thr:
                m = self.u64() * span
        return m >> 64


def _prefix(items: list, k: int, s: _Stream) -> list:
    """A partial Fisher-Yates shuffle: the ordered random k-prefix."""
    a = list(items)
    for j in range(k):
        r = j + s.below(len(a) - j)
        a[j], a[r] = a[r], a[j]
    return a[:k]


def reference(keys: list[int], vals: list[int], h: int, skey: np.ndarray, k: int, c: int,
              frequent: bool) -> list[tuple[int, list[int]]]:
    """One id's kept (key, kept values in order), by the documented policy."""
    rows = sorted(zip(keys, vals))
    distinct = sorted(set(keys))
    runs = []
    for q, key in enumerate(distinct):
        mine = [v for kk, v in rows if kk == key]
        kept = _prefix(mine, c, _Stream(skey, h, q + 1)) if len(mine) > c else mine
        runs.append((key, kept, len(mine)))
    if len(runs) > k:
        s = _Stream(skey, h, 0)
        if frequent:  # a full shuffle of positions, then stably by rows descending
            perm = list(range(len(runs)))
            for j in range(len(runs) - 1):
                r = j + s.below(len(runs) - j)
                perm[j], perm[r] = perm[r], perm[j]
            order = sorted(range(len(runs)), key=lambda i: -runs[perm[i]][2])
            runs = [runs[perm[i]] for i in order[:k]]
        else:
            runs = _prefix(runs, k, s)
    return [(key, kept) for key, kept, _ in runs]


# ----------------------------------------------------------------------------- inputs
@st.composite
def people(draw):
    n_ids = draw(st.integers(1, 5))
    per = [draw(st.integers(1, 9)) for _ in range(n_ids)]
    n = sum(per)
    keys = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    vals = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    hashes = draw(st.lists(st.integers(0, M64), min_size=n_ids, max_size=n_ids))
    words = draw(st.lists(st.integers(0, 2**32 - 1), min_size=8, max_size=8))
    k = draw(st.integers(1, 3))
    c = draw(st.integers(1, 3))
    frequent = draw(st.booleans())
    threads = draw(st.integers(1, 2))
    off = np.zeros(n_ids + 1, np.int64)
    off[1:] = np.cumsum(per)
    return (off, np.array(keys, np.int64), np.array(vals, np.int64),
            np.array(hashes, np.uint64), np.array(words, np.uint32), k, c, frequent, threads)


def _runs_of(off, nkeep, ukeys, gcn, vals_of):
    """Per id, the kept (key, kept values) from a launch's outputs."""
    return [[(int(ukeys[g]), vals_of(g, int(gcn[g]))) for g in range(off[i], off[i] + nkeep[i])]
            for i in range(off.shape[0] - 1)]


@settings(max_examples=150, deadline=None)
@given(people())
def test_every_launch_keeps_what_the_reference_policy_keeps(case) -> None:
    """Counts, value sums, the summand matrix (with its kept-row mask) and the quantile's
    kept rows all keep, per id, exactly the keys and rows of the reference policy: at most
    ``k`` keys, at most ``c`` rows per key, the same keys in the same order."""
    off, keys, vals, hashes, skey, k, c, frequent, threads = case
    n, n_ids = keys.shape[0], off.shape[0] - 1
    pol = np.int64(1) if frequent else None
    want = [reference(list(keys[off[i]:off[i + 1]]), list(vals[off[i]:off[i + 1]]),
                      int(hashes[i]), skey, k, c, frequent) for i in range(n_ids)]
    for runs in want:
        assert len(runs) <= k and len({key for key, _ in runs}) == len(runs)
        assert all(1 <= len(kept) <= c for _, kept in runs)

    # counts: the kept keys and min(rows, c)
    gk, gcnt, nkeep, graw = keys.copy(), np.empty(n, np.int64), np.empty(n_ids, np.int64), \
        np.empty(n, np.int64)
    kt.bound_counts(off, gk, hashes, skey, k, c, gcnt, nkeep, pol, graw, threads)
    got = _runs_of(off, nkeep, gk, gcnt, lambda g, m: m)
    assert got == [[(key, len(kept)) for key, kept in runs] for runs in want]

    # value sums, on the block launch and on the serial one (rows sorted already)
    for serial in (False, True):
        order = np.lexsort((vals, keys, np.repeat(np.arange(n_ids), np.diff(off))))
        gk = keys[order].copy() if serial else keys.copy()
        gv = vals[order].copy() if serial else vals.copy()
        gsum, gcnt, nkeep = np.empty(n, np.int64), np.empty(n, np.int64), \
            np.empty(n_ids, np.int64)
        if serial:
            kt.bound_values_sorted(off, gk, gv, hashes, skey, k, c, gsum, gcnt, nkeep, pol, graw)
        else:
            kt.bound_values(off, gk, gv, hashes, skey, k, c, gsum, gcnt, nkeep, pol, graw,
                            threads)
        got = _runs_of(off, nkeep, gk, gcnt, lambda g, m, s=gsum: int(s[g]))
        assert got == [[(key, sum(kept)) for key, kept in runs] for runs in want]

    # the summand matrix (x, x^2) and its kept-row mask
    mat = np.stack([vals, vals * vals], axis=1)
    gk, slots = keys.copy(), np.arange(n, dtype=np.int64)
    msum, gcnt, nkeep = np.empty((n, 2), np.int64), np.empty(n, np.int64), \
        np.empty(n_ids, np.int64)
    kept = np.zeros(n, np.bool_)
    kr.bound_rows(off, gk, slots, mat, hashes, skey, k, c, msum, gcnt, nkeep, True, kept,
                  False, pol, threads)
    got = _runs_of(off, nkeep, gk, gcnt, lambda g, m: (int(msum[g, 0]), int(msum[g, 1])))
    assert got == [[(key, (sum(v), sum(x * x for x in v))) for key, v in runs]
                   for runs in want]
    # the mask marks exactly the kept rows: per (id, key) the kept values as a multiset
    for i in range(n_ids):
        mine = range(off[i], off[i + 1])
        marked = sorted((int(keys[r]), int(vals[r])) for r in mine if kept[r])
        assert marked == sorted((key, v) for key, vs in want[i] for v in vs)

    # the quantile's kept rows (positions in the sorted rows)
    gk, gv, keep = keys.copy(), vals.copy(), np.empty(n, np.bool_)
    kq.bound_rows(off, gk, gv, hashes, skey, k, c, *[np.empty(n, np.int64) for _ in range(4)],
                  keep, pol, threads)
    for i in range(n_ids):
        got_rows = sorted(zip(gk[off[i]:off[i + 1]][keep[off[i]:off[i + 1]]].tolist(),
                              gv[off[i]:off[i + 1]][keep[off[i]:off[i + 1]]].tolist()))
        assert got_rows == sorted((key, v) for key, vs in want[i] for v in vs)


@settings(max_examples=60, deadline=None)
@given(people())
def test_distinct_rows_keep_one_row_per_value_tuple(case) -> None:
    """The summand matrix with ``distinct``: per (id, key) the candidates are the distinct
    value tuples, at most ``c`` of them kept (the reference on de-duplicated rows, keys
    chosen by the rows before de-duplication under ``"frequent"``)."""
    off, keys, vals, hashes, skey, k, c, frequent, threads = case
    n, n_ids = keys.shape[0], off.shape[0] - 1
    gk, slots = keys.copy(), np.arange(n, dtype=np.int64)
    msum, gcnt, nkeep = np.empty((n, 1), np.int64), np.empty(n, np.int64), \
        np.empty(n_ids, np.int64)
    kept = np.zeros(n, np.bool_)
    kr.bound_rows(off, gk, slots, vals[:, None].copy(), hashes, skey, k, c, msum, gcnt, nkeep,
                  True, kept, True, np.int64(1) if frequent else None, threads)
    for i in range(n_ids):
        ks = [int(x) for x in gk[off[i]:off[i] + nkeep[i]]]
        assert len(ks) <= k and len(set(ks)) == len(ks)
        rows = [(int(keys[r]), int(vals[r])) for r in range(off[i], off[i + 1])]
        marked = [(int(keys[r]), int(vals[r])) for r in range(off[i], off[i + 1]) if kept[r]]
        assert len(set(marked)) == len(marked)  # one row per distinct tuple
        for t, key in enumerate(ks):
            distinct = {v for kk, v in rows if kk == key}
            mine = [v for kk, v in marked if kk == key]
            assert len(mine) == min(len(distinct), c) == gcnt[off[i] + t]
            assert sum(mine) == msum[off[i] + t, 0]
        assert {kk for kk, _ in marked} == set(ks)
        if not frequent:  # uniform: the reference on the de-duplicated rows
            dedup = sorted(set(rows))
            want = reference([kk for kk, _ in dedup], [v for _, v in dedup], int(hashes[i]),
                             skey, k, c, False)
            assert [(key, sorted(v)) for key, v in want] == \
                [(key, sorted(v for kk, v in marked if kk == key)) for key in ks]


def test_one_id_with_many_streams_draws_its_own() -> None:
    """An id needing more streams than a batch holds (:data:`BATCH_STREAMS`) draws its own
    block 0: the same rows as the reference."""
    keys = np.repeat(np.arange(kt.BATCH_STREAMS + 5, dtype=np.int64), 3)
    vals = np.tile(np.array([5, -1, 2], np.int64), kt.BATCH_STREAMS + 5)
    n = keys.shape[0]
    off = np.array([0, n], np.int64)
    skey = np.arange(8, dtype=np.uint32)
    hashes = np.array([12345678901234567], np.uint64)
    gsum, gcnt, nkeep = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(1, np.int64)
    gk = keys.copy()
    kt.bound_values(off, gk, vals.copy(), hashes, skey, 4, 2, gsum, gcnt, nkeep, None,
                    np.empty(n, np.int64), 1)
    want = reference(list(keys), list(vals), int(hashes[0]), skey, 4, 2, False)
    assert [(int(gk[t]), int(gsum[t])) for t in range(nkeep[0])] == \
        [(key, sum(v)) for key, v in want]


# ----------------------------------------------------------------------------- structure
def _references(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name.rsplit(".", 1)[-1])
    return names


def test_the_per_person_choice_is_written_once() -> None:
    """Guards issue 37's "per-person bounding loops 6 -> 1 core": a second per-person
    choosing loop (a kernel that picks an id's keys or rows itself) would need the
    policy, the shuffle or the per-id stream addressing.  Only ``_kernels/tables.py``
    references them; inside it the two choices are called from the one block kernel only,
    and the shuffle / policy from the two choices only.  Every bounding launch goes
    through the one launcher ``bound``."""
    pkg = ROOT / "dpfast"
    core = pkg / "_kernels" / "tables.py"
    for path in pkg.rglob("*.py"):
        if path != core:
            used = _references(ast.parse(path.read_text())) & CHOOSERS
            assert not used, f"{path.relative_to(ROOT)} references {sorted(used)}"
    tree = ast.parse(core.read_text())
    callers: dict[str, set[str]] = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    callers.setdefault(node.func.id, set()).add(fn.name)
    assert callers["_choose_rows"] == callers["_choose_keys"] == {"_bound_block"}
    assert callers["_shuffle_from"] == {"_choose_rows", "_choose_keys"}
    assert callers["_most_frequent"] == {"_choose_keys"}
    assert callers["_set_nonce"] == {"_choose_rows", "_choose_keys"}
    assert callers["_want"] == {"_bound_block"}
    # one jitted per-id loop: _bound_block is the only kernel that walks ids (``off[i]``)
    walkers = {fn.name for fn in tree.body if isinstance(fn, ast.FunctionDef)
               and "off[i + 1]" in ast.unparse(fn) and fn.decorator_list}
    assert walkers == {"_bound_block"}
    for mod in ("rows.py", "quantile.py"):
        src = ast.parse((pkg / "_kernels" / mod).read_text())
        fn = next(f for f in src.body if isinstance(f, ast.FunctionDef)
                  and f.name == "bound_rows")
        assert not fn.decorator_list and "_kt.bound(" in ast.unparse(fn)
    launches = {"bound_counts", "_bound_counts_serial", "bound_values", "_bound_values_serial"}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in launches:
            assert callers["bound"] >= {fn.name}
