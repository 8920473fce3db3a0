"""The release paths of :mod:`dpfast.tables` and :mod:`dpfast.tables.histogram` (record
data)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from dpfast.testing._registry import BOUNDS, KEYS, ReleasePath, register

# parameters of the private key selection paths: small data, a threshold it passes
SELECT = {"epsilon": 3.0, "delta": 1e-2}
PUBLIC = {"epsilon": 1.0, "domain": list(KEYS)}
def _cols(d: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return d["value"].to_numpy(), d["key"].to_numpy(), d["id"].to_numpy()


def _t() -> Any:
    import dpfast.tables

    return dpfast.tables


def _value_path(name: str, fn: str, extra: dict[str, Any], *, select: bool = False) -> None:
    opts = dict(SELECT if select else PUBLIC, **extra)

    def run(d: Any, rng: bytes) -> Any:
        v, k, i = _cols(d)
        return getattr(_t(), fn)(v, k, i, rng=rng, **opts)

    register(ReleasePath(name, (f"dpfast.tables.{fn}",), run, selects_keys=select))


def _key_path(name: str, fn: str, extra: dict[str, Any], *, select: bool = False) -> None:
    opts = dict(SELECT if select else PUBLIC, **extra)

    def run(d: Any, rng: bytes) -> Any:
        _, k, i = _cols(d)
        return getattr(_t(), fn)(k, i, rng=rng, **opts)

    register(ReleasePath(name, (f"dpfast.tables.{fn}",), run, selects_keys=select))


_key_path("tables.count/domain", "count", {})
_key_path("tables.count/select", "count", {}, select=True)
_key_path("tables.count/gaussian", "count", {"rho": 0.5, "epsilon": None})
_key_path("tables.privacy_id_count/domain", "privacy_id_count", {})
_key_path("tables.privacy_id_count/select", "privacy_id_count", {}, select=True)
_key_path("tables.privacy_id_count/l2", "privacy_id_count",
          {"bounding": "l2", "max_partitions": 2, "selection": "laplace"}, select=True)
_value_path("tables.sum/domain", "sum", {"bounds": BOUNDS})
_value_path("tables.sum/select", "sum", {"bounds": BOUNDS}, select=True)
_value_path("tables.mean/domain", "mean", {"bounds": BOUNDS})
_value_path("tables.variance/domain", "variance", {"bounds": BOUNDS})
_value_path("tables.std/domain", "std", {"bounds": BOUNDS})
_value_path("tables.quantile/domain", "quantile", {"bounds": BOUNDS, "q": [0.25, 0.5]})
_value_path("tables.quantile/select", "quantile", {"bounds": BOUNDS, "q": 0.5}, select=True)
_value_path("tables.median/domain", "median", {"bounds": BOUNDS})
_value_path("tables.min/domain", "min", {"bounds": BOUNDS})
_value_path("tables.max/domain", "max", {"bounds": BOUNDS})


def _count_distinct(d: Any, rng: bytes) -> Any:
    _, k, i = _cols(d)
    return _t().count_distinct(d["code"].to_numpy(), k, i, rng=rng, max_per_partition=2,
                               **PUBLIC)


register(ReleasePath("tables.count_distinct/domain", ("dpfast.tables.count_distinct",),
                     _count_distinct))


def _aggregate(d: Any, rng: bytes) -> Any:
    return _t().aggregate(d, "key", "id", metrics=["count", ("sum", "value"),
                                                   ("mean", "value"), ("variance", "value"),
                                                   ("quantile", "value", 0.5)],
                          bounds={"value": BOUNDS}, rng=rng, **PUBLIC)


def _aggregate_select(d: Any, rng: bytes) -> Any:
    return _t().aggregate(d, "key", "id", metrics=["count", ("sum", "value")],
                          bounds={"value": BOUNDS}, rng=rng, **SELECT)


register(ReleasePath("tables.aggregate/domain", ("dpfast.tables.aggregate",), _aggregate))
register(ReleasePath("tables.aggregate/select", ("dpfast.tables.aggregate",),
                     _aggregate_select, selects_keys=True))


def _topdown(d: Any, rng: bytes, **options: Any) -> Any:
    leaf = {k: i for i, k in enumerate(KEYS)}
    public = d["key"].isin(list(KEYS)).to_numpy()  # rows outside the public leaves: dropped
    leaves = np.asarray([leaf[k] for k in d["key"][public]], dtype=np.int64)
    levels = [np.array([0, 0, 0, 1, 1]), np.arange(len(KEYS))]
    options.setdefault("rho", 0.5)
    return _t().topdown(leaves, levels, privacy_ids=d["id"].to_numpy()[public], rng=rng,
                        **options)


register(ReleasePath("tables.topdown/records", ("dpfast.tables.topdown",), _topdown))
# estimator="blue": post-processing of the same measurements (the same event and charge)
register(ReleasePath("tables.topdown/blue", ("dpfast.tables.topdown",),
                     lambda d, rng: _topdown(d, rng, estimator="blue")))
# its rounding (TopDownRelease.rounded): post-processing of the BLUE, no new charge; the
# BLUE's half-widths stay functions of the hierarchy and the noise parameters
register(ReleasePath("tables.topdown/blue-rounded", ("dpfast.tables.topdown",),
                     lambda d, rng: _topdown(d, rng, estimator="blue").rounded()))
register(ReleasePath("tables.topdown/blue-rounded-signed", ("dpfast.tables.topdown",),
                     lambda d, rng: _topdown(d, rng, estimator="blue", max_partitions=2,
                                             rho=[0.2, 0.3]).rounded(nonnegative=False)))


def _auto_bounds(d: Any, rng: bytes) -> Any:
    v, _, i = _cols(d)
    return _t().auto_bounds(v, None, i, epsilon=1.0, rng=rng)


register(ReleasePath("tables.auto_bounds", ("dpfast.tables.auto_bounds",), _auto_bounds))


def _sum_auto(d: Any, rng: bytes) -> Any:
    v, k, i = _cols(d)
    return _t().sum(v, k, i, bounds="auto", rng=rng, **PUBLIC)


register(ReleasePath("tables.sum/auto_bounds", ("dpfast.tables.sum",), _sum_auto))


def _hist() -> Any:
    # the module (dpfast.histogram is the function the top-level package re-exports)
    return importlib.import_module("dpfast.tables.histogram")


def _histogram(d: Any, rng: bytes) -> Any:
    return _hist().histogram(d["value"].to_numpy(), bins=5, range=BOUNDS,
                                      epsilon=1.0, privacy_ids=d["id"].to_numpy(), rng=rng,
                                      return_release=True)


def _histogram2d(d: Any, rng: bytes) -> Any:
    return _hist().histogram2d(d["value"].to_numpy(),
                                        d["divisor"].to_numpy().astype(np.float64),
                                        bins=3, range=[BOUNDS, (0, 4)], epsilon=1.0,
                                        privacy_ids=d["id"].to_numpy(), rng=rng,
                                        return_release=True)


def _histogramdd(d: Any, rng: bytes) -> Any:
    sample = np.stack([d["value"].to_numpy(), d["divisor"].to_numpy().astype(np.float64)],
                      axis=1)
    return _hist().histogramdd(sample, bins=(4, 2), range=[BOUNDS, (0, 4)],
                                        epsilon=1.0, weights=d["value"].to_numpy(),
                                        weight_bounds=BOUNDS,
                                        privacy_ids=d["id"].to_numpy(), rng=rng,
                                        return_release=True)


register(ReleasePath("histogram.histogram", ("dpfast.tables.histogram.histogram",),
                     _histogram))
register(ReleasePath("histogram.histogram2d", ("dpfast.tables.histogram.histogram2d",),
                     _histogram2d))
register(ReleasePath("histogram.histogramdd/weighted",
                     ("dpfast.tables.histogram.histogramdd",), _histogramdd))
