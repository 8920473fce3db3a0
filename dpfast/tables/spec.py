"""The release spec: one frozen, hashable value that says *which* release is asked for.

A :class:`ReleaseSpec` holds the statistics (:class:`StatSpec`, by registry name), the key
columns, the privacy unit, the privacy target, the contribution bounds, the value bounds, a
fingerprint of the public key domain, the key-selection and bounding rules and the
statistics' own parameters -- and nothing that only decides *its noise* (the generator) or
its bookkeeping (the ledger note).  Two releases with equal specs over the same rows ask the
same question: :meth:`ReleaseSpec.query_id` is the result cache's key for a method call and
for SQL alike.  :meth:`~ReleaseSpec.to_dict` / :meth:`~ReleaseSpec.from_dict` round-trip it
through JSON-able values; the query id is the BLAKE2b-128 hash of its canonical JSON (floats
by their exact hex form, so ``0.1`` and ``0.1000000001`` are different questions).

The spec is checked when it is made (:meth:`ReleaseSpec.make`: ValueError / TypeError naming
the parameter), before any row is read and before any charge.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeAlias, cast, overload

import numpy as np

from dpfast.tables import _plan
from dpfast.tables import bounding as _bounding
from dpfast.tables._charge import Charger as Charger  # the one Protocol; public here

if TYPE_CHECKING:
    pass

__all__ = ["StatSpec", "ReleaseSpec", "Charger", "canonical", "domain_fingerprint",
           "check_charger"]

#: A spec value: what canonical JSON can hold exactly.
Scalar = None | bool | int | float | str | bytes | Fraction
#: A frozen spec value (:func:`_frozen`): a scalar, or a tuple of frozen values.
Frozen: TypeAlias = "Scalar | tuple[Frozen, ...]"


def canonical(x: object) -> bool | str | None | dict[str, object] | list[object]:
    """A JSON-able, type-tagged form of ``x`` (equal values of different types differ)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return {"i": str(int(x))}
    if isinstance(x, (float, np.floating)):
        return {"f": float(x).hex()}
    if isinstance(x, Fraction):
        return {"q": f"{x.numerator}/{x.denominator}"}
    if isinstance(x, bytes):
        return {"b": x.hex()}
    if isinstance(x, dict):
        return {"d": sorted([str(k), canonical(v)] for k, v in x.items())}
    if isinstance(x, np.ndarray):
        return {"a": canonical(x.tolist())}
    if isinstance(x, (list, tuple)):
        return [canonical(v) for v in x]
    raise TypeError(f"cannot put a {type(x).__name__} in a release spec")


def _hash(obj: object) -> str:
    text = json.dumps(canonical(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def domain_fingerprint(domain: object) -> str | None:
    """A hash of a public key domain, in its order (the release's key order), or None."""
    if domain is None:
        return None
    if isinstance(domain, tuple):
        return _hash(["multi", [list(np.asarray(c, dtype=object).tolist()) for c in domain]])
    return _hash(["one", list(np.asarray(domain, dtype=object).tolist())])


@overload
def _frozen(x: dict[str, object]) -> tuple[tuple[str, Frozen], ...]: ...
@overload
def _frozen(x: object) -> Frozen: ...
def _frozen(x: object) -> Frozen:
    """``x`` as a hashable value (lists -> tuples, dicts -> sorted item tuples, arrays ->
    tuples); TypeError for anything a spec cannot hold."""
    if isinstance(x, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_frozen(v) for v in x)
    if isinstance(x, np.ndarray):
        return tuple(_frozen(v) for v in x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    canonical(x)  # TypeError for what a spec cannot hold
    return cast(Scalar, x)  # (what canonical() takes, past the containers above)


def _pair(x: Frozen) -> tuple[Frozen, ...]:
    """``x`` as the tuple it is for a bound pair (statically: indexing ``x`` raises at run
    time as before when it is not indexable)."""
    return cast("tuple[Frozen, ...]", x)


def check_charger(budget: object, note: object) -> None:
    """TypeError unless ``note`` is a str and ``budget`` is None or has ``spend`` (a
    :class:`dpfast.Budget`, or anything that charges like one)."""
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, got {type(note).__name__}")
    if budget is not None and not callable(getattr(budget, "spend", None)):
        raise TypeError(f"budget must be a dpfast.Budget, got {type(budget).__name__}")


@dataclasses.dataclass(frozen=True)
class StatSpec:
    """One released statistic: its registry name, its value column (None for the counts),
    its own parameters (``(("q", 0.5),)``) and its output name."""

    statistic: str
    column: str | None = None
    params: tuple[tuple[str, object], ...] = ()
    name: str = ""

    def param(self, key: str, default: object = None) -> Any:
        """The parameter ``key`` (``default`` when the statistic was not given it)."""
        return dict(self.params).get(key, default)


@dataclasses.dataclass(frozen=True)
class ReleaseSpec:
    """Which release is asked for (see the module docstring); frozen and hashable.

    ``bounds``: ``((column, lo, hi), ...)``, or ``"auto"``; ``domain``: the public key
    domain's :func:`domain_fingerprint` (None: the keys are selected privately);
    ``options``: the release family's own settings (the candidate grid of a rank
    statistic, the metrics' weights, ...) as sorted ``(name, value)`` pairs; ``rows``: a
    fingerprint of the rows the release reads when a caller has one (a session's source and
    row filter), so that the query id names the data as well as the question.
    """

    statistics: tuple[StatSpec, ...]
    by: tuple[str, ...] = ()
    privacy_unit: str | None = None
    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None
    noise: str | None = None
    max_partitions: int = 1
    max_per_partition: int = 1
    bounds: tuple[tuple[str, object, object], ...] | str | None = None
    domain: str | None = None
    selection: str = "auto"
    bounding: str = "uniform"
    options: tuple[tuple[str, object], ...] = ()
    rows: str | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def make(cls, statistics: Iterable[StatSpec], *, by: Iterable[str] = (),
             privacy_unit: str | None = None, epsilon: float | None = None,
             delta: float = 0.0, rho: float | None = None, noise: str | None = None,
             max_partitions: int = 1, max_per_partition: int = 1,
             bounds: Mapping[str, Sequence[float]] | Sequence[float] | str | None = None,
             domain: object = None, selection: str = "auto", bounding: str = "uniform",
             options: Mapping[str, object] | None = None, rows: str | None = None,
             ) -> ReleaseSpec:
        """A checked spec (ValueError / TypeError naming the parameter).  ``domain``: the
        public keys themselves (fingerprinted here) or None; ``statistics``: StatSpecs."""
        stats = tuple(statistics)
        if not stats or not all(isinstance(s, StatSpec) for s in stats):
            raise TypeError("statistics must be a non-empty sequence of StatSpec")
        privacy = _plan.privacy(epsilon, delta, rho, noise, select=domain is None)
        k = _bounding.positive_int(max_partitions, "max_partitions")
        c = _bounding.positive_int(max_per_partition, "max_per_partition")
        if not isinstance(bounding, str):
            raise TypeError(f"bounding must be a str, got {type(bounding).__name__}")
        if not isinstance(selection, str):
            raise TypeError(f"selection must be a str, got {type(selection).__name__}")
        if isinstance(bounds, dict):
            # (a bound is a pair: indexing the frozen value of anything else raises)
            bnds: tuple[tuple[str, object, object], ...] | str | None = tuple(sorted(
                (str(c_), _pair(_frozen(b))[0], _pair(_frozen(b))[1])
                for c_, b in bounds.items()))
        elif bounds is None or isinstance(bounds, str):
            bnds = bounds
        else:
            bnds = cast("tuple[tuple[str, object, object], ...]", _frozen(bounds))
        return cls(stats, tuple(by), privacy_unit, privacy.epsilon, privacy.delta,
                   privacy.rho, noise, k, c, bnds,
                   domain_fingerprint(domain), selection, bounding,
                   tuple(sorted((str(n), _frozen(v)) for n, v in (options or {}).items())),
                   rows)

    def option(self, key: str, default: object = None) -> Any:
        """The family option ``key`` (``default`` when not set)."""
        return dict(self.options).get(key, default)

    def privacy(self) -> _plan.Privacy:
        """The validated privacy target (private key selection iff no public domain)."""
        return _plan.privacy(self.epsilon, self.delta, self.rho, self.noise,
                             select=self.domain is None)

    # ------------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, object]:
        """JSON-able (through :func:`canonical`) plain values; :meth:`from_dict` inverts."""
        d = dataclasses.asdict(self)
        d["statistics"] = [dataclasses.asdict(s) for s in self.statistics]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReleaseSpec:
        """The spec of :meth:`to_dict`'s output."""
        stats = tuple(StatSpec(s["statistic"], s["column"], _frozen(s["params"]), s["name"])
                      for s in d["statistics"])
        rest = {f.name: d[f.name] for f in dataclasses.fields(cls) if f.name != "statistics"}
        for name in ("by", "options"):
            rest[name] = _frozen(rest[name])
        if rest["bounds"] is not None and not isinstance(rest["bounds"], str):
            rest["bounds"] = _frozen(rest["bounds"])
        return cls(stats, **rest)

    def query_id(self) -> str:
        """The result cache's key: 32 hex digits of BLAKE2b-128 over the canonical JSON."""
        return _hash(self.to_dict())

