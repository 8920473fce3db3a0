"""The Dask shuffle routes and encodes a privacy id by its value, not by its column's dtype.

Found by the neighbour audit (issue 36: ``dask.*:add-null_id``): one added person whose id
is missing turns the id column float64 (or object), which changed the encoding of every
other id (an integral float keyed bounding by its IEEE bits) and so everyone's kept rows
under the same key: the cells moved by up to 5 with a stated sensitivity of 1.  Now an
integral float id is the integer, a partition whose ids turned float or object sends each
id where the integer partitions send it, and a string id among integers is one more
person (dpfast._core.idhash).  (The audit also builds its Dask frames with
``dataframe.convert-string`` off: Dask's default turns an object id column into strings
before dpfast sees it -- every id then *is* a different value.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

import dask  # noqa: E402

import dpfast  # noqa: E402
import dpfast.dask as dkd  # noqa: E402
import dpfast.tables as dpt  # noqa: E402
from dpfast.dask import _shuffle as SH  # noqa: E402

from .helpers import KEY  # noqa: E402


def _frame(n: int = 600) -> Any:
    r = np.random.default_rng(5)
    return pd.DataFrame({"k": r.integers(0, 6, n), "id": r.integers(0, 80, n)})


def _ddf(df: Any, n: int = 3) -> object:
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_pandas(df, npartitions=n)


def _count(frame: object) -> np.ndarray:
    with dask.config.set(scheduler="sync"):
        return dkd.count(frame, "k", "id", epsilon=1.0, max_partitions=1,
                         domain=list(range(6)), rng=dpfast.default_rng(KEY),
                         npartitions=4).values


def test_routing_is_a_function_of_the_id_value() -> None:
    ints = np.array([5, -7, 2 ** 40, 0], np.int64)
    want = SH._route(ints)
    assert SH._route(ints.astype(np.float64)).tolist() == want.tolist()
    assert SH._route(ints.astype(object)).tolist() == want.tolist()
    mixed = np.array([5, "x", -7.0, 2 ** 40, b"y", 0], dtype=object)
    assert SH._route(mixed)[[0, 2, 3, 5]].tolist() == want.tolist()
    strs = np.array(["x", "é"], dtype=object)
    assert SH._route(mixed)[[1]].tolist() == SH._route(strs)[[0]].tolist()
    # the compact path: an int partition and a float one send each id to one piece
    a = SH.split_arrays(pd.DataFrame({"id": ints}), ["id"], "id", 3)
    b = SH.split_arrays(pd.DataFrame({"id": ints.astype(np.float64)}), ["id"], "id", 3)
    assert [p["id"].tolist() for p in a] == [p["id"].tolist() for p in b]


def test_a_missing_id_does_not_rekey_the_others() -> None:
    """Float ids with a NaN (how pandas holds an int column with a missing id) release
    what the int ids without that row release (on the old code: other kept rows)."""
    df = _frame()
    ref = _count(_ddf(df))
    with_null = pd.concat([df.astype({"id": np.float64}),
                           pd.DataFrame({"k": [0], "id": [np.nan]})], ignore_index=True)
    assert _count(_ddf(with_null)).tolist() == ref.tolist()
    as_object = pd.concat([df, pd.DataFrame({"k": [0], "id": [None]})], ignore_index=True)
    assert _count(_ddf(as_object)).tolist() == ref.tolist()


def test_a_string_id_among_integers_equals_the_tables_release() -> None:
    df = _frame()
    mixed = pd.concat([df, pd.DataFrame({"k": [1, 2], "id": ["x", "x"]})],
                      ignore_index=True)
    assert mixed["id"].dtype == object
    got = _count(_ddf(mixed))
    ref = dpt.count(mixed.k, mixed.id, epsilon=1.0, max_partitions=1, domain=list(range(6)),
                    rng=dpfast.default_rng(KEY))
    assert got.tolist() == ref.values.tolist()
