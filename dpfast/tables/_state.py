"""A :class:`~dpfast.tables.TableRelease` (or a
:class:`~dpfast.tables.TopDownRelease`) as plain JSON-able data and back
(:meth:`~dpfast.tables.TableRelease.to_state` / ``from_state``), for the session's result
cache: numbers and fixed-width arrays travel as their exact bytes (base64), object arrays of
str / bytes / int as tagged lists, floats as their hex form; nothing is ever unpickled."""

from __future__ import annotations

import base64
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast.accounting import events as _events
from dpfast.tables.release import NoiseLaw, TableRelease

__all__ = ["STATE_VERSION", "decode_array", "encode_array", "quantile_from_state",
           "quantile_state", "release_from_state",
           "release_state", "topdown_from_state", "topdown_state"]

STATE_VERSION = 1


def _encode_scalar(x: Any) -> Any:
    if isinstance(x, Fraction):
        return {"fraction": [x.numerator, x.denominator]}
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return {"float": float(x).hex()}
    if x is None or isinstance(x, str):
        return x
    raise TypeError(f"cannot serialise a {type(x).__name__} in a release")


def _decode_scalar(x: Any) -> Any:
    if isinstance(x, dict):
        if "fraction" in x:
            n, d = x["fraction"]
            return Fraction(int(n), int(d))
        return float.fromhex(x["float"])
    return x


def encode_array(a: np.ndarray) -> dict[str, Any]:
    """An array as JSON-able data that :func:`decode_array` rebuilds bit for bit."""
    a = np.asarray(a)
    if a.dtype.kind == "O":
        items = []
        for v in a.ravel().tolist():
            if isinstance(v, bytes):
                items.append({"b": base64.b64encode(v).decode()})
            elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
                items.append(_encode_scalar(v))
            else:
                raise TypeError(f"cannot serialise a {type(v).__name__} key")
        return {"object": items, "shape": list(a.shape)}
    if a.dtype.hasobject or a.dtype.kind == "V":
        raise TypeError(f"cannot serialise an array of dtype {a.dtype}")
    data = np.ascontiguousarray(a)
    return {"dtype": data.dtype.str, "shape": list(data.shape),
            "data": base64.b64encode(data.tobytes()).decode()}


def decode_array(d: dict[str, Any]) -> np.ndarray:
    """The inverse of :func:`encode_array`."""
    shape = tuple(int(s) for s in d["shape"])
    if "object" in d:
        out = np.empty(len(d["object"]), dtype=object)
        for i, v in enumerate(d["object"]):
            out[i] = base64.b64decode(v["b"]) if isinstance(v, dict) and "b" in v \
                else _decode_scalar(v)
        return out.reshape(shape)
    raw = base64.b64decode(d["data"])
    return np.frombuffer(raw, dtype=np.dtype(d["dtype"])).reshape(shape).copy()


def _encode_law(law: NoiseLaw) -> dict[str, Any]:
    return {"kind": law.kind, "scale": _encode_scalar(law.scale),
            "granularity": _encode_scalar(law.granularity)}


def _decode_law(d: dict[str, Any]) -> NoiseLaw:
    return NoiseLaw(d["kind"], _decode_scalar(d["scale"]), _decode_scalar(d["granularity"]))


def release_state(rel: TableRelease) -> dict[str, Any]:
    """:meth:`TableRelease.to_state`."""
    if not isinstance(rel.event, _events.DpEvent):
        raise TypeError("only a release whose event is a dpfast event can be serialised")
    keys = rel.keys
    mp = rel._mean_parts
    return {
        "version": STATE_VERSION,
        "type": "TableRelease",
        "keys": ([encode_array(k) for k in keys] if isinstance(keys, tuple)
                 else encode_array(keys)),
        "multi_key": isinstance(keys, tuple),
        "values": encode_array(rel.values),
        "statistic": rel.statistic,
        "event": rel.event.to_dict(),
        "law": _encode_law(rel.law),
        "threshold": rel.threshold,
        "sensitivity": {k: _encode_scalar(v) for k, v in rel.sensitivity.items()},
        "key_names": None if rel._key_names is None else list(rel._key_names),
        "value_name": rel._value_name,
        "mean_parts": None if mp is None else {
            "sums": encode_array(mp[0]), "counts": encode_array(mp[1]),
            "sum_law": _encode_law(mp[2]), "count_law": _encode_law(mp[3]),
            "lo": _encode_scalar(mp[4]), "hi": _encode_scalar(mp[5])},
        "release_id": rel.release_id,
        "selection": selection_state(rel.selection),
        "interval": _interval_state(rel._interval),
    }


def selection_state(sel: Any) -> Any:
    """A planned key selection (:class:`dpfast.tables._select.Selection`) by its inputs."""
    if sel is None:
        return None
    return {"policy": sel.policy, "k": int(sel.k), "epsilon": _encode_scalar(float(sel.epsilon)),
            "target_delta": _encode_scalar(float(sel.target_delta)),
            "delta": _encode_scalar(float(sel.delta))}


def selection_from_state(d: Any) -> Any:
    """Re-plan the selection (data-independent, deterministic) and check it is the one
    that was stored."""
    if d is None:
        return None
    from dpfast.tables import _select

    sel = _select.plan(_decode_scalar(d["epsilon"]), _decode_scalar(d["target_delta"]),
                       d["k"], d["policy"])
    if sel.delta != _decode_scalar(d["delta"]):
        raise ValueError("state's key selection does not match its parameters")
    return sel


#: interval rules a statistic brings (kind -> class with ``to_state()`` and a classmethod
#: ``from_state(d)``; the class registers itself with :func:`register_interval` when its
#: statistic's module is imported -- :mod:`dpfast.tables.statistics` imports every one)
INTERVALS: dict[str, Any] = {}


def register_interval(kind: str, cls: Any) -> None:
    """Make a statistic's interval rule serialisable under ``kind``."""
    if INTERVALS.setdefault(kind, cls) is not cls:
        raise TypeError(f"an interval rule of kind {kind!r} is already registered")


def encode_law(law: NoiseLaw) -> dict[str, Any]:
    """A noise law as data (for an interval rule's ``to_state``)."""
    return _encode_law(law)


def decode_law(d: dict[str, Any]) -> NoiseLaw:
    """The noise law of :func:`encode_law`."""
    return _decode_law(d)


def _interval_state(iv: Any) -> Any:
    """A release's own interval rule (variance / std, or a registered kind) as data."""
    if iv is None:
        return None
    kind = getattr(iv, "kind", None)
    if isinstance(kind, str) and INTERVALS.get(kind) is type(iv):
        return {"kind": kind, **iv.to_state()}
    from dpfast.tables._multi_release import VarianceInterval

    if not isinstance(iv, VarianceInterval):
        raise TypeError(f"cannot serialise an interval rule of type {type(iv).__name__}")
    return {"n": encode_array(np.asarray(iv.n)), "s1": encode_array(np.asarray(iv.s1)),
            "s2": encode_array(np.asarray(iv.s2)), "cap": _encode_scalar(float(iv.cap)),
            "laws": [_encode_law(law) for law in iv.laws], "sqrt": bool(iv.sqrt)}


def _interval_from_state(d: Any) -> Any:
    if d is None:
        return None
    if "kind" in d:
        if d["kind"] not in INTERVALS:
            raise ValueError(f"unknown interval rule {d['kind']!r} (import its statistic)")
        return INTERVALS[d["kind"]].from_state(d)
    from dpfast.tables._multi_release import VarianceInterval

    laws = tuple(_decode_law(x) for x in d["laws"])
    return VarianceInterval(decode_array(d["n"]), decode_array(d["s1"]),
                            decode_array(d["s2"]), _decode_scalar(d["cap"]),
                            (laws[0], laws[1], laws[2]), bool(d["sqrt"]))


def release_from_state(state: dict[str, Any]) -> TableRelease:
    """:meth:`TableRelease.from_state`."""
    if not isinstance(state, dict) or state.get("type") != "TableRelease":
        raise ValueError("state is not a serialised TableRelease")
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"unsupported TableRelease state version {state.get('version')!r}")
    keys = (tuple(decode_array(k) for k in state["keys"]) if state["multi_key"]
            else decode_array(state["keys"]))
    mp = state["mean_parts"]
    mean_parts = None if mp is None else (
        decode_array(mp["sums"]), decode_array(mp["counts"]), _decode_law(mp["sum_law"]),
        _decode_law(mp["count_law"]), _decode_scalar(mp["lo"]), _decode_scalar(mp["hi"]))
    names = state["key_names"]
    return TableRelease(
        keys=keys, values=decode_array(state["values"]), statistic=state["statistic"],
        event=_events.from_dict(state["event"]), law=_decode_law(state["law"]),
        threshold=state["threshold"],
        sensitivity={k: _decode_scalar(v) for k, v in state["sensitivity"].items()},
        key_names=None if names is None else tuple(names), value_name=state["value_name"],
        mean_parts=mean_parts, release_id=state["release_id"],
        selection=selection_from_state(state.get("selection")),
        interval=_interval_from_state(state.get("interval")))


def _arrays(xs: Any) -> list[Any]:
    return [None if x is None else encode_array(x) for x in xs]


def _unarrays(xs: Any) -> list[Any]:
    return [None if x is None else decode_array(x) for x in xs]


def topdown_state(rel: Any) -> dict[str, Any]:
    """:meth:`TopDownRelease.to_state`: the arrays by their bytes, the levels' rho (the
    mechanisms are rebuilt from them: ``DiscreteGaussianMechanism(rho=rho_j,
    max_changed=1)``, as :func:`dpfast.tables.topdown` makes them)."""
    return {"version": STATE_VERSION, "type": "TopDownRelease",
            "estimates": _arrays(rel.estimates), "noisy": _arrays(rel.noisy),
            "consistent": _arrays(rel.consistent), "variances": _arrays(rel.variances),
            "sigma": [_encode_scalar(float(s)) for s in rel.sigma],
            "rho": [_encode_scalar(float(r)) for r in rel.rho],
            "event": rel.event.to_dict(), "rho_total": _encode_scalar(rel.rho_total),
            "total_invariant": bool(rel.total_invariant),
            "nonnegative": bool(rel.nonnegative), "integer": bool(rel.integer),
            "release_id": rel.release_id,
            # each level mechanism's own rho (per person: rho_j / Δ_j², rounded down)
            "mech_rho": [None if m is None else _encode_scalar(float(m.rho))
                         for m in rel._mechs],
            "privacy_unit": rel.privacy_unit,
            "sensitivity": [_encode_scalar(float(x)) for x in rel.sensitivity]}


def topdown_from_state(state: dict[str, Any]) -> Any:
    """:meth:`TopDownRelease.from_state`."""
    from dpfast import mechanisms as _mechanisms
    from dpfast.tables._topdown_release import TopDownRelease

    if not isinstance(state, dict) or state.get("type") != "TopDownRelease":
        raise ValueError("state is not a serialised TopDownRelease")
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"unsupported TopDownRelease state version {state.get('version')!r}")
    rho = [_decode_scalar(r) for r in state["rho"]]
    mech_rho = [None if r is None else _decode_scalar(r)
                for r in state.get("mech_rho", [None if r == 0.0 else _encode_scalar(r)
                                                 for r in rho])]
    mechs = [None if r is None else _mechanisms.DiscreteGaussianMechanism(rho=r, max_changed=1)
             for r in mech_rho]
    sigma = [_decode_scalar(s) for s in state["sigma"]]
    for m, s in zip(mechs, sigma):
        if m is not None and float(m.sigma) != s:
            raise ValueError("state's sigma does not match its rho")
    return TopDownRelease(
        estimates=_unarrays(state["estimates"]), noisy=_unarrays(state["noisy"]),
        consistent=_unarrays(state["consistent"]), variances=_unarrays(state["variances"]),
        sigma=sigma, rho=rho, event=_events.from_dict(state["event"]),
        rho_total=_decode_scalar(state["rho_total"]),
        total_invariant=state["total_invariant"], nonnegative=state["nonnegative"],
        integer=state["integer"], mechanisms=mechs, release_id=state["release_id"],
        privacy_unit=state.get("privacy_unit", "record"),
        sensitivity=[_decode_scalar(x) for x in state.get("sensitivity", [1.0] * len(rho))])


def quantile_state(rel: Any) -> dict[str, Any]:
    """:meth:`QuantileRelease.to_state`: keys, values and grid by their bytes."""
    keys = rel.keys
    return {"version": STATE_VERSION, "type": "QuantileRelease",
            "keys": ([encode_array(k) for k in keys] if isinstance(keys, tuple)
                     else encode_array(keys)),
            "multi_key": isinstance(keys, tuple), "values": encode_array(rel.values),
            "q": [_encode_scalar(float(x)) for x in rel.q], "grid": encode_array(rel.grid),
            "epsilon_per_key": _encode_scalar(float(rel.epsilon_per_key)),
            "sensitivity": int(rel.sensitivity), "max_partitions": int(rel.max_partitions),
            "event": rel.event.to_dict(), "threshold": rel.threshold,
            "selection": selection_state(rel.selection),
            "key_names": None if rel.key_names is None else list(rel.key_names),
            "release_id": rel.release_id, "rank_utility": rel.rank_utility}


def quantile_from_state(state: dict[str, Any]) -> Any:
    """:meth:`QuantileRelease.from_state`."""
    from dpfast.tables.quantile_release import QuantileRelease

    if not isinstance(state, dict) or state.get("type") != "QuantileRelease":
        raise ValueError("state is not a serialised QuantileRelease")
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"unsupported QuantileRelease state version {state.get('version')!r}")
    keys = (tuple(decode_array(k) for k in state["keys"]) if state["multi_key"]
            else decode_array(state["keys"]))
    names = state["key_names"]
    return QuantileRelease(
        keys=keys, values=decode_array(state["values"]),
        q=tuple(_decode_scalar(x) for x in state["q"]), grid=decode_array(state["grid"]),
        epsilon_per_key=_decode_scalar(state["epsilon_per_key"]),
        sensitivity=state["sensitivity"], max_partitions=state["max_partitions"],
        event=_events.from_dict(state["event"]), threshold=state["threshold"],
        selection=selection_from_state(state["selection"]),
        key_names=None if names is None else tuple(names),
        release_id=state["release_id"],
        # a state without it was drawn by an older version: Smith's utility for every q
        rank_utility=_rank_utility(state.get("rank_utility", "floor")))


def _rank_utility(x: Any) -> str:
    if x not in ("scaled", "floor"):
        raise ValueError(f"unsupported rank utility {x!r} in a QuantileRelease state")
    return str(x)
