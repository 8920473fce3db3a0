"""The release state codec (:mod:`dpfast.tables.state`) after the knot of issue 37 was
untied: the codec imports no release class, each release class writes its own state, and
interval rules are a registry (``register_interval``; the variance / std interval is the
kind of a stored interval without a ``"kind"`` key, so payloads already cached in ledgers
still load and a variance release keeps its bytes)."""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib
from typing import Any

import numpy as np
import pytest

import dpfast
from dpfast.tables import TableRelease, _intervals
from dpfast.tables import state as _state
from dpfast.tables._law import NoiseLaw

KEY = bytes(range(32))
ROOT = pathlib.Path(__file__).resolve().parents[1] / "dpfast" / "tables"

# a std release's state as the code before the registry wrote it (std of 400 rows, keys
# "a"/"b", bounds (-2, 2), epsilon=50, domain ["a", "b"], rng=default_rng(bytes(range(32)))):
# its interval has no "kind" key
LEGACY_STD = (
    '{"version": 1, "type": "TableRelease", "keys": {"dtype": "<U1", "shape": [2], "data": "YQA'
    'AAGIAAAA="}, "multi_key": false, "values": {"dtype": "<f8", "shape": [2], "data": "fBpj0fs'
    'N7j/uGF0jc+bsPw=="}, "statistic": "std", "event": {"type": "Composed", "events": [{"type":'
    ' "DiscreteLaplace", "noise_multiplier": 0.06000000000005457, "neighbouring": "add_remove"}'
    ', {"type": "Laplace", "noise_multiplier": 0.06000000000005457, "neighbouring": "add_remove'
    '"}, {"type": "Laplace", "noise_multiplier": 0.06000000000005457, "neighbouring": "add_remo'
    've"}]}, "law": {"kind": "laplace", "scale": {"float": "0x1.eb851eb853f5dp-3"}, "granularit'
    'y": {"float": "0x1.0000000000000p-42"}}, "threshold": null, "sensitivity": {"l1": {"float"'
    ': "0x1.0000000000000p+2"}, "l2": {"float": "0x1.0000000000000p+2"}, "max_partitions": 1, "'
    'max_per_partition": 1}, "key_names": null, "value_name": "std", "mean_parts": null, "relea'
    'se_id": null, "selection": null, "interval": {"n": {"dtype": "<i8", "shape": [2], "data": '
    '"uwAAAAAAAADVAAAAAAAAAA=="}, "s1": {"dtype": "<f8", "shape": [2], "data": "QIDgY9R6SMBAVk8'
    'oxaBHwA=="}, "s2": {"dtype": "<f8", "shape": [2], "data": "wLAOmBcFZUCooYCXUAtmQA=="}, "ca'
    'p": {"float": "0x1.0000000000000p+2"}, "laws": [{"kind": "discrete_laplace", "scale": {"fl'
    'oat": "0x1.eb851eb853d71p-5"}, "granularity": {"float": "0x1.0000000000000p+0"}}, {"kind":'
    ' "laplace", "scale": {"float": "0x1.eb851eb853f5dp-3"}, "granularity": {"float": "0x1.0000'
    '000000000p-42"}}, {"kind": "laplace", "scale": {"float": "0x1.eb851eb853f5dp-3"}, "granula'
    'rity": {"float": "0x1.0000000000000p-42"}}], "sqrt": true}}'
)
# its values and its 90% interval, as that code released them (float hex)
LEGACY_VALUES = ["0x1.e0dfbd1631a7cp-1", "0x1.ce673235d18eep-1"]
LEGACY_LOW = ["0x1.df86748712e92p-1", "0x1.cd3194cab48e5p-1"]
LEGACY_HIGH = ["0x1.e23764b2d1947p-1", "0x1.cf9b78cbbc67ep-1"]


def _hex(a: np.ndarray) -> list[str]:
    return [float(v).hex() for v in a]


def test_codec_imports_no_release_module() -> None:
    """The codec is a leaf: it imports the noise law and nothing else of tables (the
    knot's root was _state importing every release class and they importing it back)."""
    tree = ast.parse((ROOT / "state.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpfast"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("dpfast"))
    assert found == {"dpfast.tables._law"}


def test_legacy_variance_state_loads_and_keeps_its_bytes() -> None:
    """A stored std state without an interval "kind" loads as the variance interval,
    gives the same values and intervals, and is written back byte for byte."""
    state = json.loads(LEGACY_STD)
    assert "kind" not in state["interval"]
    rel = TableRelease.from_state(state)
    assert isinstance(rel._interval, _intervals.VarianceInterval) and rel._interval.sqrt
    assert _hex(rel.values) == LEGACY_VALUES
    lo, hi = rel.confidence_interval(0.1)
    assert _hex(lo) == LEGACY_LOW and _hex(hi) == LEGACY_HIGH
    assert json.dumps(rel.to_state()) == LEGACY_STD


def test_variance_release_state_round_trip_without_kind() -> None:
    r = np.random.default_rng(3)
    keys, x = r.choice(["a", "b", "c"], 300), r.normal(size=300)
    rel = dpfast.tables.variance(x, keys, np.arange(300), bounds=(-2.0, 2.0), epsilon=5.0,
                                 domain=["a", "b", "c"], rng=dpfast.default_rng(KEY))
    state = json.loads(json.dumps(rel.to_state()))
    assert "kind" not in state["interval"]  # the legacy kind is written as before
    back = TableRelease.from_state(state)
    for a, b in zip(rel.confidence_interval(0.05), back.confidence_interval(0.05)):
        np.testing.assert_array_equal(a, b)
    assert json.dumps(back.to_state()) == json.dumps(rel.to_state())


@dataclasses.dataclass(frozen=True)
class _HalfWidth:
    """A registered interval rule of another kind: the value plus/minus a law's width."""

    values: np.ndarray
    law: NoiseLaw
    kind = "test_halfwidth"

    def __call__(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        w = self.law.halfwidth(alpha)
        return self.values - w, self.values + w

    def to_state(self) -> dict[str, Any]:
        return {"values": _state.encode_array(self.values),
                "law": _state.encode_law(self.law)}

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> _HalfWidth:
        return cls(_state.decode_array(d["values"]), _state.decode_law(d["law"]))


@pytest.fixture
def registered() -> Any:
    _state.register_interval(_HalfWidth.kind, _HalfWidth)
    yield _HalfWidth
    del _state.INTERVALS[_HalfWidth.kind]


def test_registered_interval_round_trips_under_its_kind(registered: Any) -> None:
    """A statistic's own interval rule travels as {"kind": kind, **rule.to_state()} and
    comes back through the registry (before the registry: a TypeError)."""
    values = np.array([3.0, 8.5])
    law = NoiseLaw("laplace", 2.0, 0.5)
    iv = registered(values, law)
    rel = TableRelease(keys=np.array(["x", "y"]), values=values, statistic="sum",
                       event=dpfast.accounting.events.EpsilonDelta(1.0, 0.0), law=law,
                       threshold=None, sensitivity={"l1": 1.0}, interval=iv)
    state = json.loads(json.dumps(rel.to_state()))
    assert state["interval"]["kind"] == "test_halfwidth"
    back = TableRelease.from_state(state)
    assert isinstance(back._interval, registered)
    for a, b in zip(rel.confidence_interval(0.1), back.confidence_interval(0.1)):
        np.testing.assert_array_equal(a, b)


def test_registry_refuses_what_it_cannot_read(registered: Any) -> None:
    with pytest.raises(TypeError, match="already registered"):
        _state.register_interval(_HalfWidth.kind, _intervals.VarianceInterval)
    _state.register_interval(_HalfWidth.kind, _HalfWidth)  # the same class again: no-op
    with pytest.raises(ValueError, match="unknown interval rule 'nope'"):
        _state._interval_from_state({"kind": "nope"})
    with pytest.raises(TypeError, match="cannot serialise an interval rule"):
        _state._interval_state(lambda alpha: (0, 0))


def test_codec_round_trips_scalars_keys_and_laws() -> None:
    from fractions import Fraction

    for x in (Fraction(3, 7), 0.1, -5, True, None, "s"):
        assert _state.decode_scalar(json.loads(json.dumps(_state.encode_scalar(x)))) == x
    keys = (np.array(["a", "b"], dtype=object), np.array([1, 2]))
    back = _state.decode_keys(json.loads(json.dumps(_state.encode_keys(keys))), True)
    assert all((a == b).all() for a, b in zip(keys, back))
    law = NoiseLaw("discrete_gaussian", Fraction(5, 2), 1.0)
    assert _state.decode_law(_state.encode_law(law)) == law
    with pytest.raises(ValueError, match="not a serialised QuantileRelease"):
        _state.check_header({"type": "TableRelease"}, "QuantileRelease")
