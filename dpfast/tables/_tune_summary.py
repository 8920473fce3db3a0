"""The contribution summary of :func:`dpfast.tables.tune`: how much each person contributes.

Three one-unit-per-person histograms over public buckets (:data:`EDGES`), computed exactly
before the charge (:func:`exact`) and released with discrete Laplace noise after it
(:func:`noisy`), or read from a public sample at no cost (:func:`from_sample`):

* ``l0``: per person, the number of distinct keys they hold (``L0``);
* ``linf``: per person, the rows of ONE of their keys, chosen uniformly with the release's
  keyed bounding (:func:`dpfast.tables._quantile_em.bound_slots` at ``k = 1``): its
  distribution over people is that of ``r_ij`` with each person's keys weighted ``1/L0_i``
  -- what uniform bounding sees;
* ``keys``: the number of distinct keys among the rows kept when every person keeps one
  key (the same keyed choice): a lower estimate of the keys, used only when no public
  domain gives their number.

Adding or removing one person changes one bucket of ``l0``, one of ``linf`` and ``keys`` by
at most 1 each (everyone else's keyed choices do not move): L1 sensitivity 3 (2 with a
public domain, when ``keys`` is not released), so discrete Laplace of scale ``3 / ε_h``
(``2 / ε_h``) on every cell is ``ε_h``-DP (CKS20; add/remove one person).  Negative cells
are post-processed to 0, and cells below :func:`floor` (a public function of the scale and
the number of cells) are set to 0, so that the empty buckets' noise does not invent many
people with large contributions.  The last bucket holds everything
from 256 (beyond the largest candidate bound, where every candidate drops the same: the
rows beyond it are not counted in the predicted bias).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from dpfast import random as _random
from dpfast._core.rounding import float_up
from dpfast.tables import _keys, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables._inputs import _Data
from dpfast.tables._law import NoiseLaw

__all__ = ["EDGES", "Exact", "Summary", "exact", "noisy", "from_sample", "floor",
           "SENSITIVITY"]

#: the public bucket edges (bucket ``j`` holds ``[EDGES[j], EDGES[j + 1])``, the last one
#: everything from ``EDGES[-1]``)
EDGES = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256], np.int64)

#: L1 sensitivity of the three parts together (one unit per person in each)
SENSITIVITY = 3
_L0_PART, _LINF_PART, _KEYS_PART = 1, 2, 3  # noise addresses


def representatives() -> np.ndarray:
    """The value a bucket stands for: the middle of its integers (the last: its edge)."""
    hi = np.append(EDGES[1:] - 1, EDGES[-1])
    return (EDGES + hi) / 2.0


@dataclasses.dataclass(frozen=True)
class Exact:
    """The exact per-bucket counts (before the charge; never published as they are)."""

    l0: np.ndarray
    linf: np.ndarray
    keys: int


@dataclasses.dataclass(frozen=True)
class Summary:
    """What the tuning knows of the contributions: ``(value, people)`` pairs of ``L0`` and
    of the rows of one uniformly chosen key per person (``linf``), the number of keys, and
    whether it is a DP release (``private``) or a public sample's exact counts."""

    l0_values: np.ndarray
    l0_weights: np.ndarray
    linf_values: np.ndarray
    linf_weights: np.ndarray
    n_keys: float
    private: bool

    @property
    def people(self) -> float:
        """The (estimated) number of people."""
        return float(self.l0_weights.sum())

    def pairs(self, k: float = math.inf) -> float:
        """Expected (person, key) pairs kept at ``max_partitions = k``:
        ``Σ_i min(L0_i, k)``."""
        return float(np.dot(np.minimum(self.l0_values, k), self.l0_weights))

    def rows_per_pair(self, c: float = math.inf) -> float:
        """Expected rows kept of a uniformly chosen pair at ``max_per_partition = c``:
        ``E min(r, c)``."""
        w = float(self.linf_weights.sum())
        if w <= 0:
            return 1.0
        return float(np.dot(np.minimum(self.linf_values, c), self.linf_weights)) / w

    def rows(self, k: float = math.inf, c: float = math.inf) -> float:
        """Expected rows kept by uniform bounding at ``(k, c)``: ``pairs(k)`` times
        ``rows_per_pair(c)`` (a person's number of keys and the rows of their keys taken
        independent)."""
        return self.pairs(k) * self.rows_per_pair(c)

    def to_dict(self) -> dict[str, object]:
        return {"l0": dict(zip(self.l0_values.tolist(), self.l0_weights.tolist())),
                "linf": dict(zip(self.linf_values.tolist(), self.linf_weights.tolist())),
                "n_keys": self.n_keys, "private": self.private}


def _buckets(x: np.ndarray) -> np.ndarray:
    return np.bincount(np.searchsorted(EDGES, x, side="right") - 1,
                       minlength=EDGES.shape[0]).astype(np.int64)


def per_person(data: _Data, subkey: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """Per person (in id order): ``L0`` and the rows of one keyed-uniform key; and the
    distinct keys kept when every person keeps that one key.  ``data.ids=None``: every row
    is its own person (one key, one row)."""
    n = data.codes.shape[0]
    if data.ids is None:
        ones = np.ones(n, np.int64)
        return ones, ones.copy(), int(np.unique(data.codes).shape[0])
    idc, _ = _keys.factorize_column(data.ids)
    n_ids = int(idc.max()) + 1 if n else 0
    pair = np.unique(idc.astype(np.int64) * max(data.n_codes, 1) + data.codes)
    l0 = np.bincount(pair // max(data.n_codes, 1), minlength=n_ids).astype(np.int64)
    # one key per person, every row of it: the release's keyed bounding at k = 1
    kept_codes, kept_ids = _em.bound_slots(data.codes, data.ids, 1, max(n, 1), subkey,
                                           idc.astype(np.int64))
    linf = np.bincount(kept_ids, minlength=n_ids).astype(np.int64)
    keys = int(np.unique(kept_codes).shape[0])
    return l0[l0 > 0], linf[linf > 0], keys


def exact(data: _Data, subkey: np.ndarray) -> Exact:
    """The exact histograms of the validated rows ``data`` (before the charge)."""
    l0, linf, keys = per_person(data, subkey)
    return Exact(_buckets(l0), _buckets(linf), keys)


def scale(eps_h: float, keys: bool = True) -> float:
    """The discrete Laplace scale of every cell: ``3 / ε_h`` (``2 / ε_h`` without the key
    count) rounded up."""
    return float_up(Fraction(SENSITIVITY - (0 if keys else 1)) / Fraction(eps_h))


def floor(t: float, cells: int = 2 * EDGES.shape[0]) -> float:
    """Cells below ``t ln(cells)`` are taken as empty (post-processing): an empty cell's
    noise passes it with probability ``1 / (2 cells)``, so about a quarter of an empty cell
    passes in all."""
    return t * math.log(cells)


def noisy(ex: Exact, eps_h: float, gen: _random.Generator, n_keys: int | None
          ) -> Summary:
    """The DP summary (after the charge): every cell plus discrete Laplace noise of scale
    :func:`scale`, each part on its own addressed streams of the release key; negative and
    sub-:func:`floor` cells set to 0.  ``n_keys``: the public domain's size (then no key
    count is released)."""
    t = scale(eps_h, n_keys is None)
    law = NoiseLaw("discrete_laplace", t)
    rkey = keynoise.release_key(gen._key, keynoise.release_stream(gen))
    cells = np.arange(EDGES.shape[0], dtype=np.int64)
    l0 = keynoise.noise_keys(law, ex.l0, rkey, cells, _L0_PART).astype(np.float64)
    linf = keynoise.noise_keys(law, ex.linf, rkey, cells, _LINF_PART).astype(np.float64)
    keys = float(n_keys) if n_keys is not None else float(max(int(keynoise.noise_keys(
        law, np.array([ex.keys], np.int64), rkey, np.zeros(1, np.int64), _KEYS_PART)[0]), 1))
    lim = floor(t)
    l0[l0 < lim] = 0.0
    linf[linf < lim] = 0.0
    if not l0.any():  # nothing above the noise: one person with one key (a stated prior)
        l0[0] = 1.0
    if not linf.any():
        linf[0] = 1.0
    reps = representatives()
    return Summary(reps, l0, reps.copy(), linf, keys, True)


def from_sample(data: _Data, n_keys: int | None, fraction: float) -> Summary:
    """The exact summary of a public sample (no noise, no buckets, no charge): ``L0`` per
    person, and every (person, key) pair's rows weighted ``1/L0`` (the expectation of the
    keyed one-key choice); people scaled by ``1 / fraction``."""
    n = data.codes.shape[0]
    if data.ids is None:
        ones = np.ones(1)
        keys = float(np.unique(data.codes).shape[0])
        return Summary(ones, np.array([n / fraction]), ones.copy(), np.array([n / fraction]),
                       float(n_keys) if n_keys is not None else keys, False)
    idc, _ = _keys.factorize_column(data.ids)
    m = max(data.n_codes, 1)
    pair, rows = np.unique(idc.astype(np.int64) * m + data.codes, return_counts=True)
    person = pair // m
    l0 = np.bincount(person).astype(np.float64)
    has = l0 > 0
    w = 1.0 / l0[person]
    lv, lw = np.unique(l0[has], return_counts=True)
    rv = np.unique(rows)
    rw = np.bincount(np.searchsorted(rv, rows), weights=w, minlength=rv.shape[0])
    keys = float(n_keys) if n_keys is not None else float(np.unique(data.codes).shape[0])
    return Summary(lv.astype(np.float64), lw / fraction, rv.astype(np.float64),
                   rw / fraction, keys, False)
