"""Adversarial people: the one person a neighbouring dataset adds or removes.

A person is a set of rows with one privacy id.  :func:`adversarial_people` makes the
people whose rows are most likely to make a release behave differently on a dataset and
on its neighbour: values far beyond the bounds, non-finite values, many keys, keys nobody
else holds, many rows in one key, rows that make an engine fail (a string where a cast
to a number fails, a zero divisor), a missing key or privacy id, and a privacy id of
another type than everyone else's.  :func:`with_person` and :func:`without_person` make
the neighbours of a record dataset (a pandas DataFrame, or a dict of equal-length
columns).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["Person", "adversarial_people", "with_person", "without_person", "KINDS"]

#: the kinds of adversarial people, in the order :func:`adversarial_people` makes them
KINDS = ("huge", "tiny", "nan", "inf", "minus_inf", "many_keys", "new_key", "many_rows",
         "engine", "null_key", "null_id", "str_id")


@dataclasses.dataclass(frozen=True)
class Person:
    """One adversarial person.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    id : any
        The person's privacy id (not held by anyone in the dataset).
    rows : dict
        Column -> values of the person's rows (the dataset's columns).
    keys : tuple
        Every key the person holds.
    new_keys : tuple
        The keys that nobody else holds (key selection may publish them only with
        probability at most δ: :func:`dpfast.testing.publication_rate`).
    """

    kind: str
    id: Any
    rows: dict[str, np.ndarray]
    keys: tuple[Any, ...]
    new_keys: tuple[Any, ...]

    def __len__(self) -> int:
        return len(next(iter(self.rows.values())))


def _columns(data: Any) -> dict[str, np.ndarray]:
    if isinstance(data, dict):
        cols = {str(k): np.asarray(v) for k, v in data.items()}
    elif hasattr(data, "columns") and hasattr(data, "__getitem__"):
        cols = {str(c): np.asarray(data[c]) for c in data.columns}
    else:
        raise TypeError("data must be a pandas DataFrame or a dict of columns, got "
                        f"{type(data).__name__}")
    lengths = {len(v) for v in cols.values()}
    if len(lengths) > 1:
        raise ValueError("data: the columns have different lengths")
    if not cols or not lengths or lengths == {0}:
        raise ValueError("data must have at least one row and one column")
    return cols


def _new_id(ids: np.ndarray) -> Any:
    if ids.dtype.kind in "iuf":
        return ids.dtype.type(np.max(ids) + 1)
    existing = set(ids.tolist())
    i = 0
    while f"adversary-{i}" in existing:
        i += 1
    return f"adversary-{i}"


def _other_type_id(ids: np.ndarray) -> Any:
    """An id of another type than ``ids``' (never equal to any of them)."""
    if ids.dtype.kind in "biuf":
        return "adversary-0"
    return 1 + max((int(v) for v in ids.tolist() if isinstance(v, (int, np.integer))),
                   default=0)


def _new_keys(keys: np.ndarray, n: int) -> list[Any]:
    if keys.dtype.kind in "iu":
        top = int(np.max(keys)) + 1
        return [keys.dtype.type(top + i) for i in range(n)]
    existing = set(keys.tolist())
    return [k for k in (f"new-key-{i}" for i in range(n + len(existing))) if k not in existing][:n]


def adversarial_people(data: Any, *, id: str = "id", key: str = "key",
                       value: str | None = "value", bounds: tuple[float, float] | None = None,
                       n_keys: int = 64, n_rows: int = 64, strings: tuple[str, ...] = (),
                       divisors: tuple[str, ...] = (), kinds: Any = None) -> list[Person]:
    """The adversarial people for a record dataset.

    Parameters
    ----------
    data : pandas.DataFrame or dict of columns
        The dataset D (not modified).
    id, key, value : str
        The privacy-id column, the key (group-by) column and the value column (None: no
        value column; the value kinds then copy a row).
    bounds : (lo, hi), optional
        The public bounds of ``value``; the extreme people lie far beyond them.
    n_keys : int
        How many keys the ``"many_keys"`` person holds (choose it far above the
        release's ``max_partitions``).
    n_rows : int
        How many rows the ``"many_rows"`` person has in one key.
    strings : tuple of str
        String columns the ``"engine"`` person fills with text no cast to a number
        accepts.
    divisors : tuple of str
        Numeric columns the ``"engine"`` person sets to zero.
    kinds : iterable of str, optional
        A subset of :data:`KINDS` (default: all that apply to the value column's dtype).

    Returns
    -------
    list of Person
        Each person's other columns copy the dataset's first row.  ``"null_key"`` holds
        the missing key None; ``"null_id"``'s rows have no privacy id (``id`` None);
        ``"str_id"``'s id is of another type than the others' (a string among numbers, an
        integer among strings: the id column becomes an object column of mixed types).
    """
    cols = _columns(data)
    for name, col in (("id", id), ("key", key)) + ((("value", value),) if value else ()):
        if col not in cols:
            raise ValueError(f"{name}={col!r} is not a column of data")
    wanted = KINDS if kinds is None else tuple(kinds)
    unknown = set(wanted) - set(KINDS)
    if unknown:
        raise ValueError(f"kinds: unknown {sorted(unknown)}; known: {list(KINDS)}")
    if n_keys < 1 or n_rows < 1:
        raise ValueError("n_keys and n_rows must be >= 1")
    pid = _new_id(cols[id])
    keys = cols[key]
    first_key = keys[0]
    vdtype = cols[value].dtype if value else None
    lo, hi = bounds if bounds is not None else (-1.0, 1.0)
    span = max(abs(float(lo)), abs(float(hi)), 1.0)
    if vdtype is not None and vdtype.kind == "f":
        huge = float(np.finfo(vdtype).max)
    elif vdtype is not None and vdtype.kind in "iu":
        huge = float(np.iinfo(vdtype).max)
    else:
        huge = 1e18 * span

    def rows(n: int, **over: Any) -> dict[str, np.ndarray]:
        out = {}
        for c, col in cols.items():
            if c in over:
                v = np.asarray(over[c], dtype=object)
                out[c] = v if col.dtype.kind in "OUT" or any(x is None for x in v) else \
                    v.astype(col.dtype)
            else:
                out[c] = np.repeat(col[:1], n)
        out[id] = np.repeat(np.asarray([pid], dtype=cols[id].dtype), n)
        return out

    def make(kind: str) -> Person | None:
        v: dict[str, Any] = {}
        if kind in ("huge", "tiny", "nan", "inf", "minus_inf") and value:
            x = {"huge": huge, "tiny": -huge, "nan": np.nan, "inf": np.inf,
                 "minus_inf": -np.inf}[kind]
            if vdtype is not None and vdtype.kind != "f":
                if kind in ("nan", "inf", "minus_inf"):
                    return None  # not representable in an integer column
                info = np.iinfo(vdtype)
                x = int(info.min) if kind == "tiny" else int(info.max)
            v[value] = [x]
            return Person(kind, pid, rows(1, **v), (first_key,), ())
        if kind in ("huge", "tiny", "nan", "inf", "minus_inf"):
            return None
        if kind == "many_keys":
            new = _new_keys(keys, n_keys)
            r = rows(n_keys, **{key: np.asarray(new, dtype=keys.dtype)})
            return Person(kind, pid, r, tuple(new), tuple(new))
        if kind == "new_key":
            new = _new_keys(keys, 1)
            return Person(kind, pid, rows(1, **{key: np.asarray(new, dtype=keys.dtype)}),
                          tuple(new), tuple(new))
        if kind == "many_rows":
            # distinct values in the bounds: rows that look like n_rows people
            over = {value: np.linspace(lo, hi, n_rows).astype(vdtype)} if value else {}
            return Person(kind, pid, rows(n_rows, **over), (first_key,), ())
        if kind == "null_key":  # a missing key (None / NULL)
            return Person(kind, pid, rows(1, **{key: np.asarray([None], dtype=object)}),
                          (None,), (None,))
        if kind == "null_id":  # rows without a privacy id
            r = rows(1)
            r[id] = np.asarray([None], dtype=object)
            return Person(kind, None, r, (first_key,), ())
        if kind == "str_id":  # an id of another type than everyone else's
            other = _other_type_id(cols[id])
            r = rows(1)
            r[id] = np.asarray([other], dtype=object)
            return Person(kind, other, r, (first_key,), ())
        # engine: strings no cast accepts, zero divisors
        over = {c: np.asarray(["not a number: ' ; --"], dtype=object) for c in strings}
        over.update({c: np.zeros(1, dtype=cols[c].dtype) for c in divisors})
        for c in (*strings, *divisors):
            if c not in cols:
                raise ValueError(f"{c!r} is not a column of data")
        return Person(kind, pid, rows(1, **over), (first_key,), ())

    return [p for p in map(make, wanted) if p is not None]


def with_person(data: Any, person: Person) -> Any:
    """``data`` with the person's rows appended (a new object of the same kind)."""
    if isinstance(data, dict):
        return {k: np.concatenate([np.asarray(v), person.rows[str(k)]]) for k, v in
                data.items()}
    import pandas as pd

    extra = pd.DataFrame({c: person.rows[str(c)] for c in data.columns})
    for c in data.columns:  # keep the dataset's dtypes where the person's values fit
        try:
            extra[c] = extra[c].astype(data[c].dtype)
        except (TypeError, ValueError):
            pass
    return pd.concat([data, extra], ignore_index=True)


def without_person(data: Any, person_id: Any, *, id: str = "id") -> Any:
    """``data`` without the rows of ``person_id`` (a new object of the same kind)."""
    cols = _columns(data)
    if id not in cols:
        raise ValueError(f"id={id!r} is not a column of data")
    keep = cols[id] != person_id
    if keep.all():
        raise ValueError(f"no row of data has {id} = {person_id!r}")
    if isinstance(data, dict):
        return {k: np.asarray(v)[keep] for k, v in data.items()}
    return data[keep].reset_index(drop=True)
