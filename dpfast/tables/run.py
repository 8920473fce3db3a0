"""The one release pipeline: plan -> partials -> **the charge** -> noise, select, finish.

Every release of :mod:`dpfast.tables` and :mod:`dpfast.dask` runs :func:`release`:

1. the spec is checked and planned (:func:`dpfast.tables.plan.plan`): shares, laws,
   selection, threshold and the **event**, from public information only (the spec and the
   source's schema) -- no row is read;
2. the backend computes the exact per-key partial aggregates (:class:`Backend`: one
   process, or a Dask cluster: shuffle by privacy id, the same per-partition step, a
   checked reduce) -- reading the rows, before any charge, so a failure here is a failure
   of the inputs and charges nothing;
3. the budget is charged with the plan's event (:func:`dpfast.tables._charge.charged`:
   a refusal raises and nothing is released; a failure after the charge is recorded as
   failed, never refunded) -- **this is the only charge site of the release layer**
   (besides :meth:`dpfast.Budget.release` for single mechanisms);
4. the plan noises, selects and finishes the release from the partials, drawing its
   release id from the generator only now.

A backend holds no statistic logic: it asks the plan for one partition's partials and for
their merge (:class:`Plan`), as PipelineDP's backends ask a combiner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from dpfast import random as _random
from dpfast.random import RngLike
from dpfast.tables import _inputs, _usecase, bounding, keynoise
from dpfast.tables._charge import charged
from dpfast.tables.plan import plan as make_plan
from dpfast.tables.spec import Charger, ReleaseSpec, check_charger

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent
    from dpfast.tables._keys import KeyColumns

__all__ = ["Plan", "Source", "Backend", "ReleaseKeys", "LocalBackend", "LOCAL", "Rows",
           "Columns", "release"]


class Source(Protocol):
    """What a plan may read of a source before any row: its public schema."""

    def has_privacy_ids(self) -> bool:
        """Whether rows carry a privacy unit (else every row is its own person)."""

    def public_domain(self) -> object:
        """The public keys the source was given (None: the keys are selected privately)."""

    def value_kind(self, column: str | None = None) -> str:
        """The dtype kind (``"i"``, ``"u"``, ``"f"``) of a value column (None: the one
        value column); TypeError naming it when it does not hold numbers."""


@dataclasses.dataclass(frozen=True)
class Columns:
    """The column names a partition task reads and the public key domain (picklable, no
    data): ``by`` key columns, ``privacy_unit`` (None: a row is a person), ``values``."""

    by: tuple[str, ...]
    privacy_unit: str | None = None
    values: tuple[str, ...] = ()
    domain: object = None


@dataclasses.dataclass(frozen=True)
class Rows:
    """A local source: the caller's columns as given (arrays, pandas Series, tuples of
    key columns), validated by the plan's partials step.  ``values``: the value column of
    a one-column statistic; ``columns``: named value columns (a many-metric release);
    ``domain``: the public keys (None: selected privately)."""

    keys: KeyColumns
    privacy_ids: npt.ArrayLike | None = None
    values: npt.ArrayLike | None = None
    columns: Mapping[str, npt.ArrayLike] | None = None
    domain: object = None
    key_names: tuple[str, ...] | None = None

    def has_privacy_ids(self) -> bool:
        return self.privacy_ids is not None

    def public_domain(self) -> object:
        return self.domain

    def value_kind(self, column: str | None = None) -> str:
        if column is None:
            if self.values is None:
                raise TypeError("values must be an array of numbers, got None")
            return _inputs.number_kind(self.values)
        cols = cast("Mapping[str, npt.ArrayLike]", self.columns)  # (None raises TypeError here)
        return _inputs.number_kind(cols[column], f"column {column!r}")


@runtime_checkable
class Plan(Protocol):
    """A planned release: its event (known before any row is read) and its steps."""

    @property
    def event(self) -> DpEvent:
        """The one privacy event the release is charged (add/remove one person)."""

    def local_partials(self, source: Any, subkey: np.ndarray) -> object:
        """Validate ``source`` (public checks: ValueError / TypeError) and compute its exact
        per-key partial aggregates in this process, bounding with ``subkey``."""

    def finish(self, partials: Any, gen: _random.Generator, release_id: int | None) -> Any:
        """Noise, select and finish the release (after the charge)."""


@dataclasses.dataclass(frozen=True)
class ReleaseKeys:
    """The randomness of one release: the generator (noise, drawn after the charge), its
    release id (a raw key's fresh id, else None) and what each worker derives the
    bounding sub-key from (the sub-key words, or a worker key and the release id)."""

    gen: _random.Generator
    release_id: int | None
    worker: Any


class Backend(Protocol):
    """Where the exact partial aggregates are computed."""

    def keys(self, rng: Any) -> ReleaseKeys:
        """The release's generator, release id and workers' key source."""

    def partials(self, plan: Plan, source: Any, keys: ReleaseKeys) -> object:
        """The exact per-key partials of ``source`` under ``plan``."""


class LocalBackend:
    """One process: the plan's own partials over the whole source."""

    def keys(self, rng: RngLike) -> ReleaseKeys:
        gen, rid = keynoise.release_generator(rng)  # a raw key: a fresh release id
        return ReleaseKeys(gen, rid, bounding.subkey(gen))

    def partials(self, plan: Plan, source: Source, keys: ReleaseKeys) -> object:
        return plan.local_partials(source, keys.worker)


#: the default backend
LOCAL = LocalBackend()


def release(spec: ReleaseSpec, source: Source, *, backend: Backend | None = None,
            budget: Charger | None = None, note: str = "", rng: object = None,
            use_case: str | None = None, plan: Plan | None = None) -> Any:
    """Run the release ``spec`` over ``source`` (see the module docstring).

    ``plan``: the plan of ``spec`` when the caller has made it already (the session reads
    its event first); otherwise :func:`dpfast.tables.plan.plan` makes it here.
    """
    check_charger(budget, note)
    if (spec.domain is None) != (source.public_domain() is None):
        # a spec planned for public keys over a source without them would publish the
        # source's keys without selection (and the reverse would select public keys)
        raise ValueError("the spec's domain and the source's disagree: give the public keys "
                         "to both, or to neither")
    back: Backend = LOCAL if backend is None else backend
    keys = back.keys(rng)
    p = make_plan(spec, source) if plan is None else plan
    _usecase.check(use_case, spec.epsilon, spec.delta, spec.rho)          # guidelines
    partials = back.partials(p, source, keys)                             # read the rows
    with charged(budget, p.event, note):                                  # THE charge
        return p.finish(partials, keys.gen, keys.release_id)              # noise, finish
