"""privacy_id_count(bounding="l2", domain=None): the key selection's candidates are the keys
of positive bounded measure (issue 36, channel 8).

The adversary is one added person holding ``T`` keys nobody else holds.  After the
``k``-key bounding of the selection they keep ``t = min(T, k)`` of them, each of measure 1
(unit counts) or ``W[t]`` (weighted unit counts), so they get at least one key published
with probability ``1 - (1 - P(m + Z >= tau))**t`` -- at most the selection's δ whatever
``T``.  The old code took the candidates from the unbounded data: the ``T - t`` unkept
keys faced the threshold too (measure 0), a probability growing with ``T`` past any δ
(about 20 x δ at ``T = 1000``, ``k = 10``, ε = 1, δ = 1e-5).

References are exact (mpmath at 60 digits over exact rationals of the floats): the
discrete Gaussian tail by direct summation (small σ) or by an integral bracket with the
Poisson-summation bound on the normalizer (large σ), the discrete Laplace tail in closed
form, the geometric rule's dyadic keep probability.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpfast
from dpfast import tables as dpt
from dpfast.tables import _ids_l2, _inputs, _select, bounding
from tests.helpers import KEY, mp

DPS = 60


def _dg_tail(sigma: Fraction, m: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """``(lower, upper)`` bounds on ``P(Z >= m)``, ``Z`` discrete Gaussian of ``sigma``."""
    with mpmath.workdps(DPS):
        s = mp(sigma)
        if float(sigma) < 200:  # direct sums; the mass past 60 sigma is below e^-1800
            top = int(60 * float(sigma)) + abs(m) + 2
            w = {z: mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * s * s)) for z in range(-top, top + 1)}
            norm = mpmath.fsum(w.values())
            tail = mpmath.fsum(v for z, v in w.items() if z >= m) / norm
            return tail, tail + mpmath.mpf(10) ** -700
        # f decreasing on [m, inf), m >= 1: int_m^inf f <= sum_{z >= m} f(z) <= f(m) + int;
        # Poisson summation: sum_z f(z) = sigma sqrt(2 pi) (1 + 2 sum_n e^(-2 pi^2 s^2 n^2))
        assert m >= 1
        integral = s * mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc(m / (s * mpmath.sqrt(2)))
        norm_lo = s * mpmath.sqrt(2 * mpmath.pi)
        norm_hi = norm_lo * (1 + 4 * mpmath.exp(-2 * mpmath.pi ** 2 * s * s))
        fm = mpmath.exp(-mpmath.mpf(m) ** 2 / (2 * s * s))
        return integral / norm_hi, (fm + integral) / norm_lo


def _key_keep(sel, measure: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """``(lower, upper)`` on the probability that a key of ``measure`` is kept, from the
    rule's definition (module docstring of :mod:`dpfast.tables._select`)."""
    with mpmath.workdps(DPS):
        if measure <= 0 and sel.policy == "geometric":
            return mpmath.mpf(0), mpmath.mpf(0)  # p(0) = 0
        if sel.policy == "geometric":
            p = mp(Fraction(sel.numerators[min(measure, len(sel.numerators) - 1)],
                            1 << sel.bits))
            return p, p
        m = sel.threshold - measure  # kept iff measure + Z >= threshold
        if sel.policy == "laplace":  # P(Z >= m) = a^m / (1 + a), a = e^(-1/t), m >= 1
            assert m >= 1
            t = Fraction(sel.law.scale)
            a = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
            p = a ** m / (1 + a)
            return p, p
        return _dg_tail(Fraction(sel.law.scale), m)


def _person_kept_measure(sel, t: int) -> int:
    """The selection measure of each of the ``t`` keys the added person keeps."""
    return 1 if sel.weights is None else int(sel.weights[t])


def _publish_probability(sel, measures: list[int]) -> tuple[mpmath.mpf, mpmath.mpf]:
    """``(lower, upper)`` on P(at least one of independent keys of these measures is
    published) = 1 - prod(1 - q_i)."""
    with mpmath.workdps(DPS):
        lo, hi = mpmath.mpf(1), mpmath.mpf(1)
        for m, n in zip(*np.unique(np.asarray(measures, np.int64), return_counts=True)):
            qlo, qhi = _key_keep(sel, int(m))
            lo *= (1 - qhi) ** int(n)
            hi *= (1 - qlo) ** int(n)
        return 1 - hi, 1 - lo


def _adversary(T: int, others: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """``others`` people holding keys 0, 1, 2 and one person (id 10**6) holding the ``T``
    keys ``1000 ..`` that nobody else holds."""
    ids = np.concatenate([np.repeat(np.arange(others), 3), np.full(T, 10 ** 6)])
    keys = np.concatenate([np.tile(np.arange(3), others), 1000 + np.arange(T)])
    return keys, ids


@pytest.mark.parametrize("policy", ["gaussian", "weighted_gaussian", "laplace", "geometric"])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_exact_publication_probability_of_the_added_person_is_at_most_delta(
        policy: str, k: int) -> None:
    """Channel 8 of issue 36: for every T, the person's keys that the release puts in front
    of the selection (:func:`_ids_l2.candidates`, with the measures the release decides
    on) give an exact publication probability <= the selection's stated δ (and the
    release's).  Fails on the old code: its candidates were every key of the data."""
    eps, delta = 1.0, 1e-5
    for T in (1, k, 3 * k + 1, 1000):
        keys, ids = _adversary(T)
        p = _ids_l2.plan(eps, delta, None, k, None, None, policy, True)
        sel = p.select
        assert sel is not None and sel.policy == policy
        gen = dpfast.default_rng(KEY)
        data, _ = _inputs._validate(keys, ids, None, None, None)
        totals, people, measure = _ids_l2.partials(p, data, bounding.subkey(gen))
        cand = _ids_l2.candidates(p, data, people, measure)
        codes = cand[np.asarray(data.uniques)[cand] >= 1000]  # the person's candidates
        got = measure[codes].tolist()
        lo, hi = _publish_probability(sel, got)
        assert hi <= mp(sel.delta) and sel.delta <= p.event.delta
        assert codes.size == min(T, k)  # exactly the keys they keep
        assert got == [_person_kept_measure(sel, min(T, k))] * min(T, k)
        assert lo <= hi and (policy != "geometric" or lo == hi)
        # the library's own keep probability agrees with this reference
        with mpmath.workdps(DPS):
            q = _select.keep_probability(sel, got[0])
            q = mp(q) if isinstance(q, Fraction) else mpmath.mpf(q)
            qlo, qhi = _key_keep(sel, got[0])
            assert qlo * (1 - mpmath.mpf(10) ** -20) <= q <= qhi * (1 + mpmath.mpf(10) ** -20)


def test_the_old_rule_exceeds_delta_by_twenty_times_at_the_defaults() -> None:
    """Why channel 8 mattered (k = 10, ε = 1, δ = 1e-5, ``selection="auto"``): with the
    T - k unkept keys (measure 0) in front of the threshold too, the person holding
    T = 1000 unshared keys is published with probability > 10 δ; the fixed release puts
    only their k kept keys there (<= δ, previous test)."""
    p = _ids_l2.plan(1.0, 1e-5, None, 10, None, None, "auto", True)
    sel = p.select
    assert sel.threshold is not None and sel.law is not None  # a thresholding rule
    kept = [_person_kept_measure(sel, 10)] * 10
    lo_old, _ = _publish_probability(sel, kept + [0] * 990)
    _, hi_new = _publish_probability(sel, kept)
    assert lo_old > 10 * mp(p.event.delta) and hi_new <= mp(sel.delta)


def _adversaries(people: int, T: int, others: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """``others`` people holding keys 0, 1, 2 and ``people`` adversaries (ids ``10**6 +
    j``), each holding ``T`` keys (``1000 + j T ..``) that nobody else holds."""
    ids = np.concatenate([np.repeat(np.arange(others), 3),
                          np.repeat(10 ** 6 + np.arange(people), T)])
    keys = np.concatenate([np.tile(np.arange(3), others), 1000 + np.arange(people * T)])
    return keys, ids


@pytest.mark.parametrize("policy", ["gaussian", "weighted_gaussian"])
def test_empirical_publication_rate_matches_the_exact_value(policy: str) -> None:
    """Channel 8 of issue 36, end to end: 100 releases (fixed key) of a dataset with 50
    adversaries, each holding T = 60 keys nobody else holds, at a large δ (0.2, so the rate
    is measurable); each adversary is the added person of its own neighbouring pair, and
    their outcomes are independent (disjoint keys, per-key noise): 5000 samples.  No
    adversary ever gets more than k keys published (the old code published their unkept
    keys too), and the rate of "at least one" is within 4.5 standard errors of the exact
    probability (the old code's was several times higher)."""
    k, T, people, reps, delta = 2, 60, 50, 100, 0.2
    keys, ids = _adversaries(people, T)
    gen = dpfast.default_rng(KEY)  # one generator: each release draws fresh streams
    hits = most = 0
    for _ in range(reps):
        rel = dpt.privacy_id_count(keys, ids, epsilon=1.0, delta=delta, max_partitions=k,
                                   bounding="l2", selection=policy, rng=gen)
        mine = np.asarray(rel.keys)
        owner = (mine[mine >= 1000] - 1000) // T
        per = np.bincount(owner, minlength=people)
        hits += int(np.count_nonzero(per))
        most = max(most, int(per.max()))
    n = reps * people
    assert most <= k
    sel = rel.selection
    assert sel.policy == policy
    lo, hi = _publish_probability(sel, [_person_kept_measure(sel, k)] * k)
    assert hi <= mp(sel.delta)
    p = float(hi)
    assert 0.01 < p  # measurable at this n
    assert abs(hits / n - p) <= 4.5 * math.sqrt(p * (1 - p) / n) + float(hi - lo)


def test_dask_selects_from_the_same_bounded_candidates() -> None:
    """Channel 8 on Dask: the same adversarial dataset gives the same release bit for bit
    (the candidates are the keys of positive reduced measure), and the person never gets
    more than k keys published."""
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    pd = pytest.importorskip("pandas")
    import dpfast.dask as dkd

    keys, ids = _adversary(400)
    df = pd.DataFrame({"id": ids, "k": keys})
    for policy in ("gaussian", "weighted_gaussian"):
        kw = dict(epsilon=1.0, delta=0.3, max_partitions=2, bounding="l2",
                  selection=policy)
        g1, g2 = dpfast.default_rng(KEY), dpfast.default_rng(KEY)
        for _ in range(3):
            ref = dpt.privacy_id_count(df.k, df.id, rng=g1, **kw)
            with dask.config.set(scheduler="synchronous"):
                got = dkd.privacy_id_count(dd.from_pandas(df, npartitions=4), "k", "id",
                                           rng=g2, npartitions=3, **kw)
            assert got.keys.tolist() == ref.keys.tolist()
            np.testing.assert_array_equal(got.values, ref.values)
            assert int(np.count_nonzero(np.asarray(ref.keys) >= 1000)) <= 2
