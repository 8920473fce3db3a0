"""Issue 40: the one sort of an id's rows, and integer ids grouped by value.

* :func:`dpfast._kernels.grouping.sort_rows` is the only merge sort of the bounding (the
  block kernel's per-id sort by key, by (key, value) or by (key, value tuple), and the most
  frequent keys' order): it orders rows as numpy's stable sorts do.
* :func:`dpfast.tables._grouped.group_ids` gives, for integer ids grouped by value without
  a code per row, exactly the arrays of the factorize-then-group path.
* The per-id choice helpers are compiled without numba's reference counting (a
  regression there was the bounding's largest cost).
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast._kernels import grouping as _kg
from dpfast._kernels import tables as _kt
from dpfast.tables import _grouped, _keys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _lex(a: np.ndarray, cols: list[np.ndarray]) -> np.ndarray:
    """The stable order by (a, cols[0], cols[1], ...)."""
    return np.lexsort([*reversed(cols), a]) if cols else np.argsort(a, kind="stable")


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 200), width=st.integers(0, 3), spread=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1))
def test_sort_rows_orders_by_key_then_value_tuple(m: int, width: int, spread: int,
                                                  seed: int) -> None:
    """The tuple order (the summand matrix's rows, ``mat[rows]``) of the one sort, on
    runs past the insertion sort's :data:`SMALL` (the merges) and ties (stability)."""
    g = np.random.default_rng(seed)
    a = g.integers(0, spread, m).astype(np.int64)
    mat = g.integers(0, spread, (m, width)).astype(np.int64)
    ix = np.arange(m, dtype=np.int64)
    want = _lex(a, [mat[:, j] for j in range(width)])
    a1, ix1 = a.copy(), ix.copy()
    _kg.sort_rows(a1, ix1, mat if width else None, 0, m, True, np.empty(m, np.int64),
                  np.empty(m, np.int64))
    if width:
        np.testing.assert_array_equal(ix1, want)  # stable: ties keep their row order
    else:
        np.testing.assert_array_equal(ix1, _lex(a, [ix]))
    np.testing.assert_array_equal(a1, a[want] if width else np.sort(a))


def test_one_merge_sort_in_the_kernels() -> None:
    """Guards issue 40's "one place": the block kernel and the quantile's bounding sort
    through :func:`dpfast._kernels.grouping.sort_rows`; no other module of the bounding
    writes a bottom-up merge (``width *= 2``) of its own."""
    merges = []
    kernels = ROOT / "dpfast" / "_kernels"
    for path in (kernels / f for f in ("grouping.py", "tables.py", "rows.py", "quantile.py")):
        for fn in ast.parse(path.read_text()).body:
            if isinstance(fn, ast.FunctionDef) and "width *= 2" in ast.unparse(fn):
                merges.append(f"{path.name}:{fn.name}")
    assert merges == ["grouping.py:sort_rows"]
    src = (ROOT / "dpfast" / "_kernels" / "tables.py").read_text()
    assert "sort_rows(" in src and "_sort_slots" not in src


def test_choice_helpers_count_no_references() -> None:
    """The helpers the block kernel calls per id are compiled with ``_nrt=False`` (no
    atomic reference counts per call; inlined at numba's level they cost about forty per
    id)."""
    for fn in (_kt._shuffle_from, _kt._choose_rows, _kt._choose_keys, _kt._most_frequent,
               _kt._set_nonce, _kt._want, _kg.sort_rows, _kg._less):
        assert fn.targetoptions.get("_nrt") is False, fn.__name__


def _factorized(ids, keys, vals, nthreads):
    codes, uniques = _keys.factorize_column(ids)
    n = ids.shape[0]
    off = np.empty(len(uniques) + 1, np.int64)
    gk = np.empty(n, np.int64)
    gv = np.empty(n, np.int64)
    _kg.group_by_id(codes, len(uniques), keys, vals, True, off, gk, gv,
                    np.empty(n, np.int32), nthreads)
    return off, gk, gv, uniques


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3000), span=st.integers(1, 3000), lo=st.integers(-10**12, 10**12),
       dtype=st.sampled_from(["int64", "int32", "uint16"]), threads=st.sampled_from([1, 2]),
       seed=st.integers(0, 2**32 - 1))
def test_ids_grouped_by_value_as_by_code(n: int, span: int, lo: int, dtype: str,
                                         threads: int, seed: int) -> None:
    """Grouping integer ids by value (range at most the rows; absent values dropped) gives
    the factorized path's offsets, grouped keys and values, and distinct ids."""
    g = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo = int(np.clip(lo, info.min, info.max - span))
    ids = (lo + g.integers(0, span, n)).astype(dtype)
    keys = g.integers(0, 40, n).astype(np.int64)
    vals = g.integers(-10**9, 10**9, n).astype(np.int64)
    off, gk, gv, uniq, codes = _grouped.group_ids(ids, keys, vals, threads, n_keys=40)
    assert (codes is None) == (_grouped.by_value(ids) is not None)
    want = _factorized(ids, keys, vals, threads)
    for got, exp in zip((off, gk, gv, uniq), want, strict=True):
        np.testing.assert_array_equal(got, exp)
    assert uniq.dtype == ids.dtype


@pytest.mark.parametrize("n_keys", [0, 1000, 2**31])
@pytest.mark.parametrize("by_value", [True, False])
def test_many_ids_grouped_two_passes(n_keys: int, by_value: bool) -> None:
    """Past :data:`GROUP_ONE_PASS_IDS` ids the grouping partitions first (with a known key
    range below ``2**31``, a row's key and its id inside its part packed in one word): the
    same arrays as the factorized path, with gaps in the ids, keys up to the bound."""
    g = np.random.default_rng(3)
    n = 400_000
    span = 300_000 if by_value else 10**12
    ids = (5 + g.integers(0, span, n)).astype(np.int64)
    keys = g.integers(0, max(n_keys, 1000), n).astype(np.int64)
    keys[:2] = [0, max(n_keys, 1000) - 1]
    vals = g.integers(0, 100, n).astype(np.int64)
    assert (_grouped.by_value(ids) is not None) == by_value
    got = _grouped.group_ids(ids, keys, vals, 2, n_keys=n_keys)
    for a, b in zip(got[:4], _factorized(ids, keys, vals, 2), strict=True):
        np.testing.assert_array_equal(a, b)
    got = _grouped.group_ids(ids, keys, None, 1, n_keys=n_keys)  # no values
    want = _factorized(ids, keys, vals, 1)
    for a, b in ((got[0], want[0]), (got[1], want[1]), (got[3], want[3])):
        np.testing.assert_array_equal(a, b)
