"""The release paths of the tuning (issue 39, part 3): :func:`dpfast.tables.tune` (a DP
summary of the contribution histogram, and the bounds and errors it recommends) and
``aggregate(..., max_partitions="auto" / max_per_partition="auto")`` (the tuning and the
release under one charge); on Dask the latter is refused before the charge.

What the audit checks (:mod:`dpfast.testing._observe`): the summary's cells move by at most
one unit per person per histogram (L1 3), censoring at the public floor aside; a value
column's histogram (its bounds chosen by the tuning) by one unit per person (L1 1); the
bounds chosen from it and the recommendation are post-processing (a
:class:`~dpfast.testing.Chosen` choice: where it differs on D and D' the release that
follows is not compared, :attr:`~dpfast.testing.AuditReport.branched`); from a public
sample nothing depends on the private rows at all.  ε is large on these paths so that the
summary is above its floor on the audit's 24 people (a vacuous all-censored summary checks
nothing).
"""

from __future__ import annotations

from typing import Any

from dpfast.testing._observe import Raised
from dpfast.testing._paths_dask import KINDS as DASK_KINDS
from dpfast.testing._paths_dask import dask_run
from dpfast.testing._registry import (
    BOUNDS,
    KEYS,
    ReleasePath,
    audit_records,
    record_cases,
    register,
)

METRICS = ["count", ("sum", "value"), ("mean", "value"), ("median", "value")]
#: the tuning's share of ε: 10 on the histograms with public bounds (floor about 1.0); a
#: few candidates (the search is post-processing: its size does not change what is audited)
TUNE = {"epsilon": 20.0, "share": 0.5, "max_partitions": [1, 2, 4],
        "max_per_partition": [1, 2, 4]}
#: the people of the slower path that chooses value bounds privately
FEW = ("huge", "nan", "many_keys", "new_key", "many_rows", "null_id")


def _t() -> Any:
    import dpfast.tables

    return dpfast.tables


def _tune_domain(d: Any, rng: bytes) -> Any:
    return _t().tune(d, "key", "id", metrics=METRICS, bounds={"value": BOUNDS},
                     domain=list(KEYS), rng=rng, **TUNE)


def _tune_select(d: Any, rng: bytes) -> Any:
    # no domain (the key count is released too) and no bounds (chosen privately)
    return _t().tune(d, "key", "id", metrics=METRICS, delta=1e-2, rng=rng, **TUNE)


def _tune_sample(d: Any, rng: bytes) -> Any:
    # a public sample: the private rows are checked (public parameters) and not read
    return _t().tune(d, "key", "id", metrics=METRICS, domain=list(KEYS),
                     public_sample=audit_records(seed=1), rng=rng, **TUNE)


register(ReleasePath("tables.tune/domain", ("dpfast.tables.tune",), _tune_domain))
register(ReleasePath("tables.tune/select-auto-bounds", ("dpfast.tables.tune",),
                     _tune_select, cases=lambda: record_cases(kinds=FEW)))
register(ReleasePath("tables.tune/public-sample", ("dpfast.tables.tune",), _tune_sample))


def _budget() -> Any:
    from dpfast import Budget

    return Budget(epsilon=1000.0, delta=0.5)


def _ledger(b: Any) -> tuple[Any, ...]:
    return tuple((c.note, str(c.event), c.status) for c in b.history())


def _auto(d: Any, rng: bytes, **options: Any) -> Any:
    """The release and the ledger of its one charge (the tuning and the release)."""
    b = _budget()
    options.setdefault("bounds", {"value": BOUNDS})
    rel = _t().aggregate(d, "key", "id", metrics=["count", ("sum", "value"),
                                                  ("mean", "value"), ("median", "value")],
                         rng=rng, budget=b, **options)
    return rel, _ledger(b)


register(ReleasePath(
    "tables.aggregate/auto", ("dpfast.tables.aggregate",),
    lambda d, rng: _auto(d, rng, epsilon=40.0, domain=list(KEYS), max_partitions="auto",
                         max_per_partition="auto")))
# private key selection at the recommended max_partitions (the Laplace rule: the
# weighted Gaussian rule's exact threshold at each of the search's candidates costs about
# a second each; its selection is audited on tables.aggregate/select)
register(ReleasePath(
    "tables.aggregate/auto-select", ("dpfast.tables.aggregate",),
    lambda d, rng: _auto(d, rng, epsilon=40.0, delta=1e-2, max_partitions="auto",
                         max_per_partition=2, selection="laplace"), selects_keys=True))
# the value bounds chosen by the tuning (a DP histogram of the values) with (k, c)
register(ReleasePath(
    "tables.aggregate/auto-bounds", ("dpfast.tables.aggregate",),
    lambda d, rng: _auto(d, rng, epsilon=40.0, domain=list(KEYS), max_partitions="auto",
                         max_per_partition=2, bounds={"value": "auto"}),
    cases=lambda: record_cases(kinds=FEW)))
register(ReleasePath(
    "tables.aggregate/auto-per-partition", ("dpfast.tables.aggregate",),
    lambda d, rng: _auto(d, rng, epsilon=40.0, domain=list(KEYS), max_partitions=2,
                         max_per_partition="auto")))


def _dask_auto(f: Any, rng: bytes) -> Any:
    import dpfast.dask

    b = _budget()
    try:
        out: Any = dpfast.dask.aggregate(f, "key", "id", metrics=["count"], epsilon=1.0,
                                         domain=list(KEYS), max_partitions="auto", rng=rng,
                                         budget=b)
    except Exception as exc:
        out = Raised.of(exc)
    return out, _ledger(b)


# the tuning runs on one machine: a Dask frame is refused before the charge
register(ReleasePath("dask.aggregate/auto", ("dpfast.dask.aggregate",), dask_run(_dask_auto),
                     cases=lambda: record_cases(kinds=DASK_KINDS[:3]), refused=ValueError))
