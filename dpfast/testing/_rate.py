"""How often a release publishes keys that only one person holds (at most δ).

With private key selection a key that only the added person holds is absent from every
release on D; on D' it may be published, and (ε, δ)-DP bounds the probability of *any*
such publication by δ (the event "one of the person's own keys is published" has
probability 0 on D).  :func:`publication_rate` runs the release on D' with ``runs``
independent generator keys and tests the count against Binomial(``runs``, δ).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from typing import Any

from dpfast.testing._audit import DEFAULT_KEY, AuditError, _check_key, _norm_keys, run_observed

__all__ = ["publication_rate", "PublicationRate", "binomial_tail"]


def binomial_tail(k: int, n: int, p: float) -> float:
    """``P[Binomial(n, p) >= k]`` (exact terms summed in floats; an upper bound within
    rounding, enough for a test level)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
             + (n - i) * lq for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@dataclasses.dataclass(frozen=True)
class PublicationRate:
    """The outcome of :func:`publication_rate`.

    Attributes
    ----------
    runs : int
        Independent runs on D'.
    published : int
        Runs that published at least one of the person's own keys.
    delta : float
        The δ the release states (or the one passed).
    p_value : float
        ``P[Binomial(runs, delta) >= published]``.
    alpha : float
        The test's level: the rate is too high when ``p_value < alpha``.
    """

    runs: int
    published: int
    delta: float
    p_value: float
    alpha: float

    @property
    def rate(self) -> float:
        return self.published / self.runs

    @property
    def passed(self) -> bool:
        return self.p_value >= self.alpha

    def check(self) -> PublicationRate:
        """Raise :class:`AuditError` if the rate is too high for δ; else return self."""
        if not self.passed:
            raise AuditError(
                f"(d) the person's own keys were published in {self.published} of "
                f"{self.runs} runs (rate {self.rate:.4g}); delta = {self.delta:.4g} allows "
                f"this with probability {self.p_value:.3g} < {self.alpha:g}")
        return self


def publication_rate(release: Callable[[Any, bytes], Any], D_prime: Any, person_keys: Any,
                     *, runs: int = 200, key: bytes | None = None, delta: float | None = None,
                     alpha: float = 1e-3, raises: bool = True) -> PublicationRate:
    """Test that a release publishes keys only one person holds no more often than δ.

    Parameters
    ----------
    release : callable
        ``release(data, rng)`` as for :func:`dpfast.testing.audit`.
    D_prime : any
        The dataset with the person (:func:`dpfast.testing.with_person`).
    person_keys : iterable
        The keys that only the person holds (:attr:`Person.new_keys`).
    runs : int
        Independent runs (generator key ``i`` of run ``i`` is derived from ``key``; the
        test is reproducible).
    key : bytes, optional
        32 bytes (default a fixed key).
    delta : float, optional
        The δ to test against (default: the largest δ of the release's events).
    alpha : float
        Level of the binomial test.
    raises : bool
        Raise :class:`AuditError` when the rate is too high (default).

    Returns
    -------
    PublicationRate
    """
    key = DEFAULT_KEY if key is None else _check_key(key)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    own = set(_norm_keys(person_keys))
    if not own:
        raise ValueError("person_keys is empty: name the keys only the person holds")
    published, stated = 0, 0.0
    for i in range(runs):
        k = hashlib.blake2b(i.to_bytes(8, "little"), key=key, digest_size=32).digest()
        obs = run_observed(release, D_prime, k)
        if obs.raised is not None:
            raise AuditError(f"run {i} of the release raised {obs.raised.type}: "
                             f"{obs.raised.message[:300]}")
        stated = max([stated, *(t.delta for t in obs.tables)])
        published += any(own & set(t.cells) for t in obs.tables)
    d = stated if delta is None else float(delta)
    if not 0 <= d < 1:
        raise ValueError(f"delta must be in [0, 1), got {d!r}")
    result = PublicationRate(runs, published, d, binomial_tail(published, runs, d), alpha)
    return result.check() if raises else result
