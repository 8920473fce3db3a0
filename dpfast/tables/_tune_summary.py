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
  domain gives their number;
* ``logsum``: ``G = Σ_j floor(16 log2(1 + x_j))`` over the keys ``j`` (the public domain's,
  or those among the chosen keys), ``x_j`` the people whose one chosen key is ``j``: with
  their mean ``P / K`` it gives the spread of the key sizes (:func:`spread`).

Adding or removing one person changes one bucket of ``l0``, one of ``linf`` and ``keys`` by
at most 1 each (everyone else's keyed choices do not move): L1 sensitivity 3 (2 with a
public domain, when ``keys`` is not released), so discrete Laplace of scale ``3 / ε_c``
(``2 / ε_c``) on every cell is ``ε_c``-DP (CKS20; add/remove one person).  The same person
changes one ``x_j`` by 1, hence one term of ``G`` by at most 16 (``log2((x + 2) / (x + 1))
<= 1``; a key new to the chosen keys adds ``floor(16 log2 2) = 16``): discrete Laplace of
scale ``16 / ε_g`` on ``G`` is ``ε_g``-DP.  ``ε_g = ε_h / 3`` and ``ε_c = ε_h - ε_g``, both
rounded down, so the summary is ``ε_h``-DP by basic composition.  Negative cells
are post-processed to 0, and cells below :func:`floor` (a public function of the scale and
the number of cells) are set to 0, so that the empty buckets' noise does not invent many
people with large contributions.  The last bucket holds everything
from 256 (beyond the largest candidate bound, where every candidate drops the same: the
rows beyond it are not counted in the predicted bias).
"""

from __future__ import annotations

import dataclasses
import math
import statistics as _stats
from fractions import Fraction

import numpy as np

from dpfast import random as _random
from dpfast._core.rounding import float_down, float_up
from dpfast.tables import _keys, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables._inputs import _Data
from dpfast.tables._law import NoiseLaw

__all__ = ["EDGES", "Exact", "Summary", "exact", "noisy", "from_sample", "floor",
           "SENSITIVITY", "LOG_UNITS", "spread", "lognormal_shares", "split"]

#: the public bucket edges (bucket ``j`` holds ``[EDGES[j], EDGES[j + 1])``, the last one
#: everything from ``EDGES[-1]``)
EDGES = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256], np.int64)

#: L1 sensitivity of the three parts together (one unit per person in each)
SENSITIVITY = 3
_L0_PART, _LINF_PART, _KEYS_PART, _LOG_PART = 1, 2, 3, 4  # noise addresses
#: ``G``'s units per bit (its L1 sensitivity: one person moves one term by at most this)
LOG_UNITS = 16
#: the largest spread (standard deviation of the log key sizes) the model takes
MAX_SPREAD = 3.0
#: the equal-probability nodes of the log-normal key sizes
NODES = 16


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
    logsum: int = 0


@dataclasses.dataclass(frozen=True)
class Summary:
    """What the tuning knows of the contributions: ``(value, people)`` pairs of ``L0`` and
    of the rows of one uniformly chosen key per person (``linf``), the number of keys, and
    whether it is a DP release (``private``) or a public sample's exact counts; the key
    sizes relative to their mean (``key_shares``, mean 1 under ``key_weights``, which sum
    to 1) and, from a DP summary, the log-normal spread they were drawn from
    (``key_spread``; None: a public sample's own key sizes)."""

    l0_values: np.ndarray
    l0_weights: np.ndarray
    linf_values: np.ndarray
    linf_weights: np.ndarray
    n_keys: float
    private: bool
    key_shares: np.ndarray = dataclasses.field(default_factory=lambda: np.ones(1))
    key_weights: np.ndarray = dataclasses.field(default_factory=lambda: np.ones(1))
    key_spread: float | None = None
    #: the public floor below which a DP summary's cells were published as 0
    #: (:func:`floor` of the cells' scale); None for a public sample's exact counts
    floor: float | None = None

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
                "n_keys": self.n_keys, "private": self.private,
                "key_shares": dict(zip(self.key_shares.tolist(),
                                       self.key_weights.tolist())),
                "key_spread": self.key_spread, "floor": self.floor}


def _buckets(x: np.ndarray) -> np.ndarray:
    return np.bincount(np.searchsorted(EDGES, x, side="right") - 1,
                       minlength=EDGES.shape[0]).astype(np.int64)


def _people_per_key(data: _Data, chosen: np.ndarray) -> np.ndarray:
    """``x_j``: the people whose one chosen key is ``j`` (``chosen``: that key's code, one
    entry per person), over the public domain's keys, else over the chosen keys."""
    x = np.bincount(chosen, minlength=max(data.n_codes, 1)).astype(np.int64)
    if data.domain_codes is not None:
        return x[data.domain_codes]
    return x[x > 0]


def logsum(x: np.ndarray) -> int:
    """``G = Σ_j floor(16 log2(1 + x_j))``.  The float ``log2`` is exact at powers of
    two, and ``16 log2(y)`` is an integer only there, so each term is the exact floor;
    ``tests/test_tune.py`` checks that consecutive terms differ by at most 16."""
    if x.size == 0:
        return 0
    return int(np.floor(LOG_UNITS * np.log2(1.0 + x.astype(np.float64))).sum())


def per_person(data: _Data, subkey: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Per person (in id order): ``L0`` and the rows of one keyed-uniform key; the
    distinct keys kept when every person keeps that one key; and per key the people who
    chose it (:func:`_people_per_key`).  ``data.ids=None``: every row is its own person
    (one key, one row)."""
    n = data.codes.shape[0]
    if data.ids is None:
        ones = np.ones(n, np.int64)
        return (ones, ones.copy(), int(np.unique(data.codes).shape[0]),
                _people_per_key(data, data.codes.astype(np.int64)))
    idc, _ = _keys.factorize_column(data.ids)
    n_ids = int(idc.max()) + 1 if n else 0
    pair = np.unique(idc.astype(np.int64) * max(data.n_codes, 1) + data.codes)
    l0 = np.bincount(pair // max(data.n_codes, 1), minlength=n_ids).astype(np.int64)
    # one key per person, every row of it: the release's keyed bounding at k = 1
    kept_codes, kept_ids = _em.bound_slots(data.codes, data.ids, 1, max(n, 1), subkey,
                                           idc.astype(np.int64))
    linf = np.bincount(kept_ids, minlength=n_ids).astype(np.int64)
    keys = int(np.unique(kept_codes).shape[0])
    # one entry per person: the code of their chosen key (all its rows share it)
    chosen = np.unique(kept_ids.astype(np.int64) * max(data.n_codes, 1) + kept_codes)
    x = _people_per_key(data, chosen % max(data.n_codes, 1))
    return l0[l0 > 0], linf[linf > 0], keys, x


def exact(data: _Data, subkey: np.ndarray) -> Exact:
    """The exact histograms of the validated rows ``data`` (before the charge)."""
    l0, linf, keys, x = per_person(data, subkey)
    return Exact(_buckets(l0), _buckets(linf), keys, logsum(x))


def split(eps_h: float) -> tuple[float, float]:
    """``(ε_c, ε_g)``: the cells' and ``G``'s shares of ``ε_h`` (a third to ``G``), each
    rounded down, ``ε_c + ε_g <= ε_h`` exactly."""
    e = Fraction(eps_h)
    eg = float_down(e / 3)
    return float_down(e - Fraction(eg)), eg


def spread(g: float, people: float, n_keys: float) -> float:
    """The log-normal spread ``σ`` of the key sizes from ``G`` (in :data:`LOG_UNITS` per
    bit) and the mean ``P / K`` of ``x``: a log-normal ``1 + x`` has
    ``ln E(1 + x) - E ln(1 + x) = σ² / 2`` (the floor's mean loss, half a unit, added
    back); clipped to ``[0, MAX_SPREAD]``."""
    k = max(n_keys, 1.0)
    mean_ln = (g / k + 0.5) / LOG_UNITS * math.log(2.0)
    s2 = 2.0 * (math.log1p(max(people, 0.0) / k) - mean_ln)
    return min(math.sqrt(max(s2, 0.0)), MAX_SPREAD)


def lognormal_shares(sigma: float, nodes: int = NODES) -> tuple[np.ndarray, np.ndarray]:
    """Key sizes relative to their mean under a log-normal of spread ``sigma``: the
    ``nodes`` equal-probability quantiles ``exp(σ z - σ²/2)``, renormalised to mean 1."""
    if sigma <= 0.0:
        return np.ones(1), np.ones(1)
    z = np.array([_stats.NormalDist().inv_cdf((i + 0.5) / nodes) for i in range(nodes)])
    rel = np.exp(sigma * z - sigma * sigma / 2)
    return rel / rel.mean(), np.full(nodes, 1.0 / nodes)


def scale(eps_c: float, keys: bool = True) -> float:
    """The discrete Laplace scale of every cell at the cells' share ``ε_c``: ``3 / ε_c``
    (``2 / ε_c`` without the key count) rounded up."""
    return float_up(Fraction(SENSITIVITY - (0 if keys else 1)) / Fraction(eps_c))


def floor(t: float, cells: int = 2 * EDGES.shape[0]) -> float:
    """Cells below ``t ln(cells)`` are taken as empty (post-processing): an empty cell's
    noise passes it with probability ``1 / (2 cells)``, so about a quarter of an empty cell
    passes in all."""
    return t * math.log(cells)


def noisy(ex: Exact, eps_h: float, gen: _random.Generator, n_keys: int | None
          ) -> Summary:
    """The DP summary (after the charge): every cell plus discrete Laplace noise of scale
    :func:`scale` at ``ε_c``, ``G`` plus discrete Laplace noise of scale ``16 / ε_g``
    (:func:`split`), each part on its own addressed streams of the release key; negative
    and sub-:func:`floor` cells set to 0.  ``n_keys``: the public domain's size (then no
    key count is released)."""
    eps_c, eps_g = split(eps_h)
    t = scale(eps_c, n_keys is None)
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
    glaw = NoiseLaw("discrete_laplace", float_up(Fraction(LOG_UNITS) / Fraction(eps_g)))
    g = float(keynoise.noise_keys(glaw, np.array([ex.logsum], np.int64), rkey,
                                  np.zeros(1, np.int64), _LOG_PART)[0])
    sigma = spread(g, float(l0.sum()), keys)
    shares, weights = lognormal_shares(sigma)
    reps = representatives()
    return Summary(reps, l0, reps.copy(), linf, keys, True, shares, weights, sigma, lim)


def from_sample(data: _Data, n_keys: int | None, fraction: float) -> Summary:
    """The exact summary of a public sample (no noise, no buckets, no charge): ``L0`` per
    person, every (person, key) pair's rows weighted ``1/L0`` (the expectation of the
    keyed one-key choice), people scaled by ``1 / fraction``; and the sample's own key
    sizes (:func:`sample_shares`)."""
    n = data.codes.shape[0]
    shares, weights = sample_shares(data)
    if data.ids is None:
        ones = np.ones(1)
        keys = float(np.unique(data.codes).shape[0])
        return Summary(ones, np.array([n / fraction]), ones.copy(), np.array([n / fraction]),
                       float(n_keys) if n_keys is not None else keys, False, shares,
                       weights)
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
                   rw / fraction, keys, False, shares, weights)


def sample_shares(data: _Data) -> tuple[np.ndarray, np.ndarray]:
    """A public sample's key sizes (rows per key: the domain's keys, empty ones included,
    else the keys present) relative to their mean, each distinct size weighted by its
    share of the keys."""
    rows = np.bincount(data.codes, minlength=max(data.n_codes, 1)).astype(np.float64)
    rows = rows[data.domain_codes] if data.domain_codes is not None else rows[rows > 0]
    if rows.size == 0 or rows.sum() <= 0:
        return np.ones(1), np.ones(1)
    vals, cnt = np.unique(rows / rows.mean(), return_counts=True)
    return vals, cnt / cnt.sum()
