"""Per-protocol report checks and integer tallies of the streaming server.

``check(name, proto, arrays)`` refuses any report a client of ``proto`` could not have
produced (wrong columns, dtypes, shapes, out-of-range indices, set padding bits) with a
``ValueError`` / ``TypeError`` naming the column; ``empty(name, proto, width)`` is the
zero state; ``tally(name, proto, arrays, state, items)`` adds a checked batch into the
state in place.  States are dicts of int64 arrays; two states of one configuration add
entry by entry (that is the merge).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast._kernels import local_tally as _kt
from dpfast.local._lanes import _threads
from dpfast.local._validate import _binary
from dpfast.local.olh import OlhReports

# bit t of byte value v, as int64 (256, 8): per-bit counts = byte histogram @ _BITS
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1,
                      bitorder="little").astype(np.int64)

COLUMNS: dict[str, tuple[str, ...]] = {
    "rr": ("values",), "krr": ("values",), "oue": ("bits",), "olh": ("seeds", "values"),
    "cms": ("rows", "bits"), "hcms": ("rows", "cols", "bits"), "rappor": ("cohorts", "bits"),
}


def _packed(bits: Any, n: int, m: int, name: str) -> np.ndarray:
    """Packed bits ``(n, ceil(m / 8))`` uint8 with zero padding above bit m."""
    arr = np.asarray(bits)
    nbytes = -(-m // 8)
    if arr.dtype != np.uint8 or arr.shape != (n, nbytes):
        raise ValueError(f"{name} must be a ({n}, {nbytes}) uint8 array of packed bits, got "
                         f"{arr.dtype} {arr.shape}")
    if m % 8 and n and np.any(arr[:, -1] >> np.uint8(m % 8)):
        raise ValueError(f"{name}: padding bits above bit {m} are set (no client sets them)")
    return np.ascontiguousarray(arr)


def _ints(values: Any, name: str, hi: int, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with {n} entries, got shape {arr.shape}")
    if arr.dtype.kind != "u":
        raise ValueError(f"{name} must be unsigned integers, got dtype {arr.dtype}")
    if arr.size and int(arr.max()) >= hi:
        raise ValueError(f"{name} must lie in [0, {hi}), got max {int(arr.max())}")
    return arr


def width_of(name: str, proto: Any) -> tuple[int, ...]:
    """Shape of the main tally of a protocol (rows, columns)."""
    if name in ("rr", "krr", "oue", "olh"):
        return (proto.k,)
    if name in ("cms", "hcms"):
        return (proto.num_hashes, proto.sketch_size)
    return (proto.num_cohorts, proto.num_bits)


def empty(name: str, proto: Any, width: int | None = None) -> dict[str, np.ndarray]:
    """The zero state (``width``: OLH's number of counted domain values)."""
    if name in ("rr", "krr", "oue"):
        return {"counts": np.zeros(proto.k, np.int64)}
    if name == "olh":
        return {"counts": np.zeros(proto.k if width is None else width, np.int64)}
    rows, cols = width_of(name, proto)
    return {"counts": np.zeros((rows, cols), np.int64), "totals": np.zeros(rows, np.int64)}


def check(name: str, proto: Any, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The batch's columns, checked against the protocol (see the module docstring)."""
    want = COLUMNS[name]
    if set(arrays) != set(want):
        raise ValueError(f"reports of {name!r} must have the columns {list(want)}, got "
                         f"{sorted(arrays)}")
    first = np.asarray(arrays[want[0]])
    if first.ndim < 1:
        raise ValueError(f"reports.{want[0]} must be an array of reports")
    n = first.shape[0]
    if name in ("rr", "krr"):
        return {"values": _ints(arrays["values"], "reports.values", proto.k, n)}
    if name == "oue":
        return {"bits": _packed(arrays["bits"], n, proto.k, "reports.bits")}
    if name == "olh":
        seeds = np.asarray(arrays["seeds"])
        if seeds.dtype != np.uint64 or seeds.shape != (n, 3):
            raise ValueError(f"reports.seeds must be a ({n}, 3) uint64 array, got "
                             f"{seeds.dtype} {seeds.shape}")
        return {"seeds": np.ascontiguousarray(seeds),
                "values": _ints(arrays["values"], "reports.values", proto.g, n)}
    if name == "cms":
        return {"rows": _ints(arrays["rows"], "reports.rows", proto.num_hashes, n),
                "bits": _packed(arrays["bits"], n, proto.sketch_size, "reports.bits")}
    if name == "hcms":
        bits = _ints(arrays["bits"], "reports.bits", 2, n)
        return {"rows": _ints(arrays["rows"], "reports.rows", proto.num_hashes, n),
                "cols": _ints(arrays["cols"], "reports.cols", proto.sketch_size, n),
                "bits": _binary(bits, "reports.bits")}
    return {"cohorts": _ints(arrays["cohorts"], "reports.cohorts", proto.num_cohorts, n),
            "bits": _packed(arrays["bits"], n, proto.num_bits, "reports.bits")}


# reports per kernel call: the uint32 histograms (half the cache of int64) cannot overflow
_BLOCK = 1 << 31


def bit_counts(bits: np.ndarray, m: int) -> np.ndarray:
    """How many of the packed reports have each of the m bits set (int64, length m)."""
    n, nbytes = bits.shape
    total = np.zeros((nbytes, 256), np.int64)
    for a in range(0, n, _BLOCK):
        blk = bits[a:a + _BLOCK]
        parts = max(1, min(8, blk.shape[0] // 65536 + 1))
        hist = np.zeros((parts, nbytes, 256), np.uint32)
        with _threads(blk.shape[0] * nbytes):
            _kt.byte_hist(blk, parts, hist)
        total += hist.sum(axis=0, dtype=np.int64)
    return (total @ _BITS).reshape(-1)[:m]


def row_bit_counts(rows: np.ndarray, bits: np.ndarray, nrows: int, m: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-row bit counts ``(nrows, m)`` and reports per row ``(nrows,)``."""
    n, nbytes = bits.shape
    total = np.zeros((nrows, nbytes, 256), np.int64)
    per_row = np.zeros(nrows, np.int64)
    for a in range(0, n, _BLOCK):
        blk_rows, blk = rows[a:a + _BLOCK], bits[a:a + _BLOCK]
        starts = np.empty(nrows + 1, np.int64)
        order = np.empty(blk_rows.size, np.int64)
        _kt.row_order(blk_rows, nrows, starts, order)
        hist = np.zeros((nrows, nbytes, 256), np.uint32)
        with _threads(blk_rows.size * nbytes):
            _kt.row_byte_hist(order, starts, blk, nrows, hist)
        total += hist
        per_row += np.diff(starts)
    counts = (total @ _BITS).reshape(nrows, -1)[:, :m]
    return counts, per_row


def tally(name: str, proto: Any, arrays: dict[str, np.ndarray], state: dict[str, np.ndarray],
          items: np.ndarray | None) -> None:
    """Add a checked batch into ``state`` (in place)."""
    if name in ("rr", "krr"):
        state["counts"] += np.bincount(arrays["values"], minlength=proto.k)
    elif name == "oue":
        state["counts"] += bit_counts(arrays["bits"], proto.k)
    elif name == "olh":
        vals = arrays["values"].astype(np.int64)
        state["counts"] += proto.aggregate(OlhReports(arrays["seeds"], vals), items)
    elif name == "hcms":
        k, m = proto.num_hashes, proto.sketch_size
        cell = arrays["rows"].astype(np.int64) * m + arrays["cols"]
        total = np.bincount(cell, minlength=k * m)
        plus = np.bincount(cell[arrays["bits"].astype(bool)], minlength=k * m)
        state["counts"] += (2 * plus - total).reshape(k, m)
        state["totals"] += np.bincount(arrays["rows"], minlength=k)
    else:
        rows = arrays["rows"] if name == "cms" else arrays["cohorts"]
        nrows, m = width_of(name, proto)
        counts, totals = row_bit_counts(rows, arrays["bits"], nrows, m)
        state["counts"] += counts
        state["totals"] += totals


def check_state(name: str, proto: Any, state: Any, n: int, width: int | None
                ) -> dict[str, np.ndarray]:
    """A loaded state checked: the columns of :func:`empty`, int64 tallies of n reports."""
    want = empty(name, proto, width)
    if not isinstance(state, dict) or set(state) != set(want):
        raise ValueError(f"state of {name!r} must have the arrays {sorted(want)}")
    out = {}
    for key, zero in want.items():
        arr = np.asarray(state[key])
        if arr.dtype.kind not in "iu" or arr.shape != zero.shape:
            raise ValueError(f"state.{key} must be a {zero.shape} integer array, got "
                             f"{arr.dtype} {arr.shape}")
        out[key] = arr.astype(np.int64)
    c = out["counts"]
    low = -n if name == "hcms" else 0
    if c.size and (int(c.min()) < low or int(c.max()) > n):
        raise ValueError(f"state.counts must lie in [{low}, n={n}] (tallies of n reports)")
    if "totals" in out:
        t = out["totals"]
        if (t.size and int(t.min()) < 0) or int(t.sum()) != n:
            raise ValueError(f"state.totals must be non-negative and sum to n={n}")
        if np.any(np.abs(c) > t[:, None]):
            raise ValueError("state.counts exceed the totals of their row")
    elif name in ("rr", "krr") and int(c.sum()) != n:
        raise ValueError(f"state.counts must sum to n={n}")
    return out
