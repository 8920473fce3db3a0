"""The codec of the releases' state (:meth:`~dpfast.tables.TableRelease.to_state` /
``from_state``), for the session's result cache: numbers and fixed-width arrays travel as
their exact bytes (base64), object arrays of str / bytes / int as tagged lists, floats as
their hex form; nothing is ever unpickled.

Only the codec lives here (arrays, scalars, keys, noise laws, the header check, and the
registry of interval rules); each release class writes and reads its own state in its own
module (:class:`~dpfast.tables.TableRelease` in :mod:`dpfast.tables.release`,
:class:`~dpfast.tables.QuantileRelease` in :mod:`dpfast.tables.quantile_release`,
:class:`~dpfast.tables.TopDownRelease` in :mod:`dpfast.tables._topdown_release`), the key
selection in :mod:`dpfast.tables._select`, and an interval rule in the module that defines
it (it registers itself with :func:`register_interval`).  So this module imports nothing of
:mod:`dpfast.tables` but the noise law (:mod:`dpfast.tables._law`)."""

from __future__ import annotations

import base64
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpfast.tables._law import NoiseLaw

__all__ = ["INTERVALS", "LEGACY_INTERVAL_KIND", "STATE_VERSION", "check_header",
           "decode_array", "decode_keys", "decode_law", "decode_scalar", "encode_array",
           "encode_keys", "encode_law", "encode_scalar", "register_interval"]

STATE_VERSION = 1

#: interval rules a statistic brings (kind -> class with ``to_state()`` and a classmethod
#: ``from_state(d)``; the class registers itself with :func:`register_interval` when its
#: module is imported)
INTERVALS: dict[str, type[IntervalRule]] = {}

#: the interval kind of a payload without a ``"kind"`` key: the variance / std interval,
#: the only rule before the registry (payloads already cached in ledgers load as it, and
#: it is still written without the key, so a variance release keeps its bytes)
LEGACY_INTERVAL_KIND = "variance"


@runtime_checkable
class IntervalRule(Protocol):
    """A statistic's own interval rule as the codec keeps it: ``to_state()`` and the
    classmethod ``from_state(d)`` (and the class attribute ``kind`` it is registered
    under)."""

    def __call__(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """The ``1 - alpha`` intervals ``(low, high)``."""

    def to_state(self) -> dict[str, Any]:
        """The rule as JSON-able data."""

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> IntervalRule:
        """The rule of :meth:`to_state`."""


def encode_scalar(x: object) -> int | str | None | dict[str, object]:
    """A number (exact: Fraction as a pair, float as its hex form), bool, str or None as
    JSON-able data that :func:`decode_scalar` rebuilds."""
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


def decode_scalar(x: object) -> Any:
    """The inverse of :func:`encode_scalar`."""
    if isinstance(x, dict):
        if "fraction" in x:
            n, d = x["fraction"]
            return Fraction(int(n), int(d))
        return float.fromhex(x["float"])
    return x


def encode_array(a: np.ndarray) -> dict[str, object]:
    """An array as JSON-able data that :func:`decode_array` rebuilds bit for bit."""
    a = np.asarray(a)
    if a.dtype.kind == "O":
        items: list[object] = []
        for v in a.ravel().tolist():
            if isinstance(v, bytes):
                items.append({"b": base64.b64encode(v).decode()})
            elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
                items.append(encode_scalar(v))
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
                else decode_scalar(v)
        return out.reshape(shape)
    raw = base64.b64decode(d["data"])
    return np.frombuffer(raw, dtype=np.dtype(d["dtype"])).reshape(shape).copy()


def encode_keys(keys: np.ndarray | tuple[np.ndarray, ...]
                ) -> list[dict[str, object]] | dict[str, object]:
    """A release's keys (one array, or a tuple of arrays for multi-column keys)."""
    return [encode_array(k) for k in keys] if isinstance(keys, tuple) else encode_array(keys)


def decode_keys(d: Any, multi_key: bool) -> np.ndarray | tuple[np.ndarray, ...]:
    """The inverse of :func:`encode_keys` (``multi_key``: the keys were a tuple)."""
    return tuple(decode_array(k) for k in d) if multi_key else decode_array(d)


def encode_law(law: NoiseLaw) -> dict[str, object]:
    """A noise law as data (for a release's or an interval rule's ``to_state``)."""
    return {"kind": law.kind, "scale": encode_scalar(law.scale),
            "granularity": encode_scalar(law.granularity)}


def decode_law(d: dict[str, Any]) -> NoiseLaw:
    """The noise law of :func:`encode_law`."""
    return NoiseLaw(d["kind"], decode_scalar(d["scale"]), decode_scalar(d["granularity"]))


def check_header(state: object, type_name: str) -> dict[str, Any]:
    """``state`` if it is a serialised ``type_name`` of this version (ValueError else)."""
    if not isinstance(state, dict) or state.get("type") != type_name:
        raise ValueError(f"state is not a serialised {type_name}")
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"unsupported {type_name} state version {state.get('version')!r}")
    return state


def register_interval(kind: str, cls: type[IntervalRule]) -> None:
    """Make an interval rule serialisable under ``kind`` (``cls`` has ``to_state()`` and a
    classmethod ``from_state(d)``)."""
    if INTERVALS.setdefault(kind, cls) is not cls:
        raise TypeError(f"an interval rule of kind {kind!r} is already registered")


def _interval_state(iv: object) -> dict[str, object] | None:
    """A release's own interval rule (a registered kind) as data: ``{"kind": kind,
    **iv.to_state()}`` (the legacy kind without the key)."""
    if iv is None:
        return None
    kind = getattr(iv, "kind", None)
    if not isinstance(kind, str) or INTERVALS.get(kind) is not type(iv) \
            or not isinstance(iv, IntervalRule):  # (a registered class is one)
        raise TypeError(f"cannot serialise an interval rule of type {type(iv).__name__}")
    if kind == LEGACY_INTERVAL_KIND:
        return dict(iv.to_state())
    return {"kind": kind, **iv.to_state()}


def _interval_from_state(d: dict[str, Any] | None) -> IntervalRule | None:
    """The interval rule of :func:`_interval_state` (dispatch on ``d["kind"]``; a payload
    without it is the legacy variance interval)."""
    if d is None:
        return None
    kind = d.get("kind", LEGACY_INTERVAL_KIND)
    if kind not in INTERVALS:
        raise ValueError(f"unknown interval rule {kind!r} (import its statistic)")
    return INTERVALS[kind].from_state(d)
