"""diffprivlib's Snapping, Exponential and PermuteAndFlip on dpfast's samplers."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast._core.rounding import float_up
from dpfast.compat._measure import sample_measured
from dpfast.compat._random_state import NoiseBuffer, generator_for
from dpfast.compat.diffprivlib._additive import as_array
from dpfast.compat.diffprivlib._fastcheck import FastChecks, init_permute_and_flip
from dpfast.compat.diffprivlib._small import MAX_CANDIDATES, words_for
from dpfast.compat.diffprivlib._small import permute_and_flip as _small_pf

__all__ = ["Snapping", "Exponential", "PermuteAndFlip"]

# diffprivlib's own classes, taken at import: install() rebinds the names in
# diffprivlib.mechanisms to this module's classes, so a call-time ``_dm.PermuteAndFlip`` would
# find the replacement itself (and recurse forever)
_DPL_PERMUTE_AND_FLIP = _dm.PermuteAndFlip
_MAX_REPLICAS = 1 << 20  # integer measures up to this total are sampled exactly by replication


class Snapping(_dm.Snapping):
    r"""diffprivlib's ``Snapping`` on :func:`dpfast.snapping`.

    Values are shifted and scaled to sensitivity 1 and the symmetric bound
    ``B = (upper - lower) / (2 Δ)`` exactly as diffprivlib does, then snapped by dpfast
    (ChaCha20 bits; the uniform ``U*`` drawn over all doubles in (0, 1) as Mironov requires).

    Privacy
    -------
    Mironov, "On Significance of the Least Significant Bits for Differential Privacy", CCS
    2012, Thm. 1: for values within the bound, snapping with ``λ`` and clamp bound ``B'`` is
    ``(1 + 2^-49 B') / λ``-DP (:func:`dpfast.snapping_epsilon`).  Here ``λ`` is the smallest
    float with that quantity ``<= ε``, and ``B' = B`` (when ``B <= λ``, ``B'`` is enlarged
    to ``2λ`` until ``λ < B'``, which the mechanism needs; values are clamped to ``±B``
    before and after, post-processing).  ``ε <= 2^-48`` admits no such ``λ`` and is
    refused (``ValueError``; diffprivlib accepts down to ``2^-52``).
    Guarantee: ``ε``-DP for neighbouring values at distance ``<= Δ``.  **Difference**:
    diffprivlib's ``effective_epsilon`` uses ``(ε - 2η) / (1 + 12 B η)``; this class uses
    Mironov's Thm. 1 bound (``effective_epsilon() = 1 / λ``).  ``ε`` so large that
    ``B >= 2^46 λ`` is refused (``ValueError``; use :class:`Laplace`).  As dpfast documents,
    the analysis assumes a correctly rounded ``log`` (glibc's is < 1 ulp).
    """

    def __init__(self, *, epsilon, sensitivity, lower, upper, random_state=None):
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, lower=lower, upper=upper,
                         random_state=random_state)
        self._gen = generator_for(random_state)

    def _params(self) -> tuple[float, float]:
        eps = Fraction(self.epsilon)
        b = self._bound
        lam = float_up((1 + Fraction(2) ** -49 * Fraction(b)) / eps)
        b_used = b
        for _ in range(64):  # B <= λ: enlarge the clamp bound until λ < B' (needs ε > 2^-48)
            if b_used > lam:
                break
            b_used = 2 * lam
            lam = float_up((1 + Fraction(2) ** -49 * Fraction(b_used)) / eps)
        else:
            raise ValueError(f"epsilon={self.epsilon} is too small for the snapping mechanism's "
                             "guarantee (Mironov 2012 needs epsilon > 2**-48); use Laplace")
        for _ in range(1 << 16):  # a few ulps in practice; bounded regardless
            if not dpfast.snapping_epsilon(lam, b_used, 1.0) > self.epsilon:
                break
            lam = math.nextafter(lam, math.inf)
        else:  # pragma: no cover
            raise ValueError(f"epsilon={self.epsilon} could not be calibrated for the "
                             f"snapping mechanism with bound {b_used}")
        if not b_used < 2.0 ** 46 * lam:
            raise ValueError(f"epsilon={self.epsilon} is too large for snapping with bound "
                             f"{b_used} (needs bound < 2**46 / epsilon); use Laplace")
        return lam, b_used

    def effective_epsilon(self):
        """``1 / λ``: the Laplace parameter used (see the class Privacy section)."""
        return 1.0 / self._params()[0]

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        arr = as_array(value, "biuf", "a number")
        self._check_all(0.0 if arr is not None else value)
        x = np.asarray(arr if arr is not None else [value], dtype=np.float64)
        b = self._bound
        if self.sensitivity == 0:
            out = np.clip(x, -b, b)
        else:
            y = np.clip(x / self.sensitivity - b - self.lower / self.sensitivity, -b, b)
            if self.epsilon != math.inf:
                lam, b_used = self._params()
                y = np.clip(dpfast.snapping(y, lam, b_used, rng=self._gen), -b, b)
            out = (y + b) * self.sensitivity + self.lower
        return out if arr is not None else float(out[0])


@functools.lru_cache(maxsize=4096)
def _coefficient(epsilon: float, sensitivity: float, k: int) -> Fraction:
    """``ε / (k Δ)`` as an exact rational (cached: a tree's leaves share one)."""
    return Fraction(epsilon) / (Fraction(sensitivity) * k)


def _uniform_index(gen: Any, k: int) -> int:
    return 0 if k == 1 else int(gen.integers(0, k))


class _LazyProbabilities:
    """diffprivlib's ``_probabilities`` computed on first read instead of in ``__init__``
    (dpfast samples from the utilities; a tree builds one mechanism per leaf and never
    reads them)."""

    _LAZY = object()

    @classmethod
    def _find_probabilities(cls, epsilon, sensitivity, utility, monotonic, measure=None):
        return cls._LAZY

    @property
    def _probabilities(self):
        p = self.__dict__.get("_probabilities_value", self._LAZY)
        if p is self._LAZY:
            dpl = next(c for c in type(self).__mro__
                       if c.__module__.startswith("diffprivlib.")
                       and "_find_probabilities" in c.__dict__)
            args = (self.epsilon, self.sensitivity, self.utility, self.monotonic)
            p = dpl._find_probabilities.__func__(dpl, *args, self.measure)
            self.__dict__["_probabilities_value"] = p
        return p

    @_probabilities.setter
    def _probabilities(self, value) -> None:
        self.__dict__["_probabilities_value"] = value


class Exponential(FastChecks, _LazyProbabilities, _dm.Exponential):
    r"""diffprivlib's ``Exponential`` (McSherry & Talwar 2007) sampled by dpfast.

    ``randomise(value=None, *, size=None)`` returns one candidate, or with ``size=n`` an
    array of ``n`` independent selections (vectorized).

    Privacy
    -------
    ``P[i] ∝ measure_i · exp(c u_i)``, ``c = ε / (2Δ)`` (``ε / Δ`` when ``monotonic``):
    ``ε``-DP for neighbouring datasets whose utilities differ by at most ``sensitivity`` Δ.
    Uniform measure (default) and integer measures with total ``<= 2^20`` (each candidate
    replicated ``measure_i`` times, zero-measure candidates dropped) are sampled exactly by
    :func:`dpfast.exponential` (exact Gumbel-max, ChaCha20 bits); any other measure (e.g.
    the interval lengths of ``diffprivlib.tools.quantile``) exactly by certified inversion
    with an interval-arithmetic continuation (:mod:`dpfast.compat._measure`;
    its fast path assumes the platform ``log``/``exp`` within 2^12 ulps).  Versus
    diffprivlib: same distribution, which diffprivlib's float probabilities only
    approximate.  ``ε = inf`` or ``Δ = 0``: uniform over the maximal candidates (of positive
    measure).  ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, sensitivity, utility, monotonic=False, candidates=None,
                 measure=None, random_state=None):
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, utility=utility,
                         monotonic=monotonic, candidates=candidates, measure=measure,
                         random_state=random_state)
        self._gen = generator_for(random_state)
        self._buf: NoiseBuffer | None = None

    @property
    def _buffer(self) -> NoiseBuffer:
        """Pre-drawn selections, created on first use (one draw per object is common: a
        tree's leaves, served by the scalar path without it)."""
        if self._buf is None:
            self._buf = NoiseBuffer(first=1)
        return self._buf

    def _exact_layout(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(utilities, candidate index per entry) for exact sampling, or None."""
        u = np.asarray(self.utility, dtype=np.float64)
        idx = np.arange(u.size)
        if self.measure is None:
            return u, idx
        m = np.asarray(self.measure, dtype=np.float64)
        if np.all(m == m[0]) and m[0] > 0:
            return u, idx
        if np.all(m >= 0) and np.all(m == np.floor(m)) and 0 < m.sum() <= _MAX_REPLICAS:
            reps = m.astype(np.int64)
            return np.repeat(u, reps), np.repeat(idx, reps)
        return None

    def _draw(self, n: int) -> np.ndarray:
        u = np.asarray(self.utility, dtype=np.float64)
        if self.sensitivity == 0 or self.epsilon == math.inf:
            top = np.flatnonzero(np.isclose(u - np.max(u), 0))
            if self.measure is not None:
                top = top[np.asarray(self.measure, dtype=np.float64)[top] > 0]
            return top[[_uniform_index(self._gen, top.size) for _ in range(n)]]
        layout = self._exact_layout()
        if layout is None:  # general float measure: certified inversion, exact continuation
            c = Fraction(self.epsilon) / (Fraction(self.sensitivity) * (1 if self.monotonic else 2))
            return sample_measured(u, self.measure, c, self._gen, n)
        v, owner = layout
        if v.size == 1:
            return np.full(n, owner[0])
        return owner[self._select(np.repeat(v[None, :], n, axis=0))]  # writable, C order

    def _select(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(dpfast.exponential(rows, epsilon=self.epsilon,
                                             sensitivity=self.sensitivity,
                                             monotonic=self.monotonic, rng=self._gen))

    def _label(self, i: int) -> Any:
        return self.candidates[i] if self.candidates else i

    def randomise(self, value=None, *, size=None):
        """Select a candidate (or ``size`` independent candidates, as an array)."""
        self._check_all(value)
        if size is None:
            tag = (tuple(self.utility), self.epsilon, self.sensitivity, self.monotonic,
                   None if self.measure is None else tuple(self.measure))
            return self._label(int(self._buffer.take(tag, self._draw)))
        picks = self._draw(int(size))
        if self.candidates:
            out = np.empty(picks.size, dtype=object)
            out[:] = [self.candidates[i] for i in picks]
            return out
        return picks.astype(np.int64)


class PermuteAndFlip(_dm.PermuteAndFlip, Exponential):
    r"""diffprivlib's ``PermuteAndFlip`` (McKenna & Sheldon 2020) sampled exactly by
    :func:`dpfast.permute_and_flip`.

    Privacy
    -------
    ``ε``-DP for utilities of sensitivity Δ (``monotonic``: coin bias
    ``exp(ε (u_i - u_max) / Δ)``, i.e. dpfast's with sensitivity ``Δ/2``).  Exact: every coin
    is decided exactly on ChaCha20 bits.  ``ε = inf`` or ``Δ = 0``: uniform over the maximal
    candidates.  ``randomise(size=n)`` gives ``n`` independent selections.
    """

    # diffprivlib's PermuteAndFlip defines its own: take the lazy one back
    _find_probabilities = _LazyProbabilities.__dict__["_find_probabilities"]

    def __init__(self, *, epsilon, sensitivity, utility, monotonic=False, candidates=None,
                 random_state=None):
        if init_permute_and_flip(self, epsilon, sensitivity, utility, monotonic, candidates,
                                 random_state):
            # (a tree builds one per leaf: diffprivlib's __init__ without the ABC checks, the
            # same attributes; then what Exponential.__init__ below adds)
            self._gen = generator_for(random_state)
            self._buf = None
            return
        _DPL_PERMUTE_AND_FLIP.__init__(self, epsilon=epsilon, sensitivity=sensitivity,
                                    utility=utility, monotonic=monotonic, candidates=candidates,
                                    random_state=random_state)
        # (diffprivlib's __init__ ran Exponential.__init__ above: _gen and the buffer are set)

    def _select(self, rows: np.ndarray) -> np.ndarray:
        sens = self.sensitivity / 2 if self.monotonic else self.sensitivity
        return np.asarray(dpfast.permute_and_flip(rows, epsilon=self.epsilon, sensitivity=sens,
                                                  rng=self._gen))

    def randomise(self, value=None, *, size=None):
        """Select a candidate (or ``size`` independent candidates, as an array)."""
        if (size is None and len(self.utility) <= MAX_CANDIDATES and self.sensitivity != 0
                and self.epsilon != math.inf):
            # one draw of few candidates (a tree leaf): pure Python, exact, no array overhead
            self._check_all(value)
            c = _coefficient(self.epsilon, self.sensitivity, 1 if self.monotonic else 2)
            return self._label(_small_pf(self.utility, c, words_for(self._gen)))
        return Exponential.randomise(self, value, size=size)
