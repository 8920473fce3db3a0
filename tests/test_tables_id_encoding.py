"""Privacy ids are encoded element by element (dpfast._core.idhash).

Found by the neighbour audit (issue 36): the randomness of contribution bounding is keyed
by each id's 64-bit canonical value, and that value depended on the id *column's* dtype.
One added person whose id is missing turned a pandas int column into float64 (an integral
float was encoded by its IEEE bits, not as the integer), and one person whose id is a
string among integers made ``dpfast.tables`` raise ``TypeError: privacy_ids mixes element
types`` (a failure that depends on one person's row).  Both changed every other person's
kept rows under the same key: the cells moved by more than the stated sensitivity in the
audit's record/replay.  Now each id's value alone gives its encoding, and a privacy-id
column may mix ints, floats, strings and bytes.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

import dpfast
import dpfast.testing as T
from dpfast import tables as dpt
from dpfast._core.idhash import factorize_mixed, id_hash_one, id_hashes
from tests.helpers import KEY

DOM = {"domain": [0, 1, 2, 3]}
# 12 people, each with rows in 3 of 4 keys: max_partitions=1 makes bounding choose a key
IDS = np.repeat(np.arange(12, dtype=np.int64), 3)
KEYS = np.asarray([(i + j) % 4 for i in range(12) for j in range(3)], np.int64)


def _count(ids: object, keys: object = KEYS) -> np.ndarray:
    rel = dpt.count(keys, ids, epsilon=1.0, max_partitions=1, rng=dpfast.default_rng(KEY),
                    **DOM)
    return rel.values


def test_an_integral_float_id_is_the_integer() -> None:
    """A missing id makes the column float64: the others keep their integer encoding (on
    the old code the float column re-keyed everyone: different kept rows)."""
    ids = IDS.astype(np.float64)
    with_null = np.concatenate([ids, [np.nan]])
    keys = np.concatenate([KEYS, [0]])
    assert _count(with_null, keys).tolist() == _count(IDS).tolist()
    assert _count(pd.Series(list(IDS) + [None], dtype=object), keys).tolist() == \
        _count(IDS).tolist()


def test_a_string_id_among_integers_is_one_more_person() -> None:
    """On the old code: TypeError 'privacy_ids mixes element types'."""
    D = {"id": IDS, "key": KEYS}
    (p,) = T.adversarial_people(D, value=None, kinds=["str_id"])
    assert p.id == "adversary-0"
    D2 = T.with_person(D, p)
    assert D2["id"].dtype == object

    def release(d: dict, rng: bytes) -> object:
        return dpt.count(d["key"], d["id"], epsilon=1.0, max_partitions=1, rng=rng, **DOM)

    report = T.audit(release, D, D2, person_keys=p.keys)
    assert report.passed and report.cells_checked == 4


def test_canonical_values_are_per_element() -> None:
    assert id_hash_one(7) == id_hash_one(7.0) == id_hash_one(np.int64(7)) == 7
    assert id_hash_one(-1) == id_hash_one(-1.0) == (1 << 64) - 1
    assert id_hash_one(0.0) == id_hash_one(-0.0) == 0
    assert id_hash_one(True) == 1
    assert id_hash_one((1 << 64) - 1) == (1 << 64) - 1  # uint64 ids as before
    s = int.from_bytes(hashlib.blake2b(b"s7", digest_size=8).digest(), "little")
    assert id_hash_one("7") == s != 7  # strings as before, never an integer's value
    assert len({id_hash_one(x) for x in (1.5, -1.5, float("inf"), -float("inf"), 2.0 ** 70,
                                         1 << 70, b"7", "7", 7)}) == 9
    mixed = np.array([3, "a", 2.0, b"z", 1 << 70], dtype=object)
    assert id_hashes(mixed).tolist() == [id_hash_one(v) for v in mixed]
    assert id_hashes(np.array([3.0, 2.5])).tolist() == [3, id_hash_one(2.5)]
    assert id_hashes(np.array([3, 2], np.uint32)).tolist() == [3, 2]
    with pytest.raises(TypeError, match="privacy_ids must hold"):
        id_hash_one(object())


def test_mixed_ids_factorize_by_value() -> None:
    x = np.array(["b", 2, b"z", 1.0, "a", 1, 2], dtype=object)
    codes, uniq = factorize_mixed(x)
    assert uniq.tolist() == [1.0, 2, "a", "b", b"z"]  # numbers, strings, bytes
    assert codes.tolist() == [3, 1, 4, 0, 2, 0, 1]
    rev, uniq2 = factorize_mixed(x[::-1].copy())
    assert [id_hash_one(v) for v in uniq2] == [id_hash_one(v) for v in uniq]


def test_key_columns_still_refuse_mixed_types() -> None:
    keys = np.array([0, "a", 1], dtype=object)
    with pytest.raises(TypeError, match="keys mixes element types"):
        dpt.count(keys, None, epsilon=1.0, domain=[0, 1], rng=dpfast.default_rng(KEY))


def test_an_id_beyond_uint64_is_one_more_person() -> None:
    """An integer id past 2**64 (or one past 2**63 among negative ids) made the column
    unrepresentable in int64 / uint64: an OverflowError raised by one person's row."""
    D = {"id": IDS - 3, "key": KEYS}  # negative ids too
    for big in (1 << 70, 1 << 63):
        D2 = {"id": np.concatenate([D["id"].astype(object), np.array([big], object)]),
              "key": np.concatenate([KEYS, [1]])}

        def release(d: dict, rng: bytes) -> object:
            return dpt.count(d["key"], d["id"], epsilon=1.0, max_partitions=1, rng=rng,
                             **DOM)

        assert T.audit(release, D, D2, person_keys=(1,)).passed
