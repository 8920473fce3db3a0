"""dpfast.compat.diffprivlib: the samplers added for issue 25 -- Staircase, LaplaceBoundedNoise,
the classic Gaussian, the scalar permute-and-flip path -- against exact laws, and the models'
own numpy randomness on ChaCha20 (``check_random_state`` under ``install()``)."""

from __future__ import annotations

import copy
import math
import pickle
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from tests.helpers import KEY, analytic_gaussian_delta, chisquare_pvalue

diffprivlib = pytest.importorskip("diffprivlib")
pytest.importorskip("sklearn")
from diffprivlib import mechanisms as dm  # noqa: E402

import dpfast  # noqa: E402
from dpfast.compat import diffprivlib as dpl  # noqa: E402
from dpfast.compat.diffprivlib import (  # noqa: E402
    _gaussian,
    _numpy_rng,
    _small,
    _staircase,
    _truncated,
)

SEED = int.from_bytes(KEY[:4], "little")


def _ok(counts, probs) -> bool:
    return chisquare_pvalue(np.asarray(counts), np.asarray(probs), min_expected=5) > 1e-4


# ----------------------------------------------------------------------------- Staircase
def _staircase_pmf(eps: float, n: int, m: int, width: int) -> dict[int, mpmath.mpf]:
    """Exact P(i) for |i| <= width (mpmath; the normaliser in closed form)."""
    e = mpmath.exp(-mpmath.mpf(eps))
    block = m + (n - m) * e  # one side's weight of stair 0
    z = 2 * block / (1 - e) - (1 if m > 0 else e)  # both sides, 0 counted once
    out = {}
    for i in range(-width, width + 1):
        k, r = divmod(abs(i), n)
        out[i] = e ** k * (1 if r < m else e) / z
    return out


@pytest.mark.parametrize("eps, n, m", [(0.7, 5, 2), (1.3, 4, 0), (0.4, 3, 3), (2.0, 7, 6)])
@pytest.mark.parametrize("forced", [False, True])
def test_staircase_draws_exact_law(eps: float, n: int, m: int, forced: bool,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The discrete staircase sampler against its exact pmf (small stairs, so every cell is
    visible), with the part coin's float test and through its exact continuation."""
    monkeypatch.setattr(_staircase, "FORCE_EXACT", forced)
    gen = dpfast.default_rng(KEY)
    size = 40_000 if forced else 200_000
    z = _staircase.staircase_draws(size, eps, n, m, gen)
    width = 6 * n
    pmf = _staircase_pmf(eps, n, m, width)
    cells = np.arange(-width, width + 1)
    counts = np.array([(z == i).sum() for i in cells] + [(np.abs(z) > width).sum()])
    probs = [float(pmf[i]) for i in cells]
    assert _ok(counts, probs + [1 - sum(probs)])


def test_staircase_privacy_ratio_and_class() -> None:
    """P(i) / P(i') <= e^ε whenever |i - i'| <= N (the Privacy argument, checked on the exact
    pmf), the grid class's layout and behaviour."""
    eps, n, m = 0.9, 6, 2
    with mpmath.workprec(200):  # the ratio is exactly e^ε at |i'| = |i| + N
        pmf = _staircase_pmf(eps, n, m, 8 * n)
        bound = mpmath.exp(mpmath.mpf(eps)) * (1 + mpmath.mpf(2) ** -150)
        for i in range(-6 * n, 6 * n + 1):
            for j in range(-n, n + 1):
                assert pmf[i] <= bound * pmf[i + j]
    mech = dpl.Staircase(epsilon=1.0, sensitivity=3.0, gamma=0.25, random_state=SEED)
    _, g, n_steps, m_steps = mech._params()
    assert 3.0 < n_steps * g <= 3.0 + g and m_steps == round(Fraction(0.25) * n_steps)
    x = mech.randomise(np.full(100_000, 2.0))
    assert np.all(np.rint(x / g) * g == x)
    # P(|noise| < Δγ) = γ / (γ + (1-γ) e^{-ε}) (1 - e^{-ε}) up to the grid's 2^-40
    p = 0.25 * (1 - math.exp(-1)) / (0.25 + 0.75 * math.exp(-1))
    assert abs(np.mean(np.abs(x - 2.0) < 0.75) - p) < 5 * math.sqrt(p * (1 - p) / x.size)
    assert isinstance(mech.randomise(1.0), float) and math.isnan(mech.randomise(math.nan))
    assert dpl.Staircase(epsilon=math.inf, sensitivity=1.0).randomise(2.5) == 2.5
    assert dpl.Staircase(epsilon=1.0, sensitivity=0.0).randomise(2.5) == 2.5
    with pytest.raises(ValueError, match="epsilon"):
        dpl.Staircase(epsilon=1e-9, sensitivity=1.0).randomise(0.0)


# ----------------------------------------------------------------------------- truncated
def _truncated_delta_bruteforce(t: Fraction, k0: int, k: int) -> mpmath.mpf:
    q = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
    z = sum(q ** abs(i) for i in range(-k, k + 1))
    return sum(q ** i for i in range(k - k0 + 1, k + 1)) / z


@pytest.mark.parametrize("t, k", [(Fraction(7, 2), 30), (Fraction(40), 12), (Fraction(5, 3), 1)])
def test_truncated_draws_exact_law(t: Fraction, k: int) -> None:
    """P(z) ∝ q^{|z|} on [-K, K] exactly, in the flat (K <= 2t) and geometric regimes."""
    gen = dpfast.default_rng(KEY)
    z = _truncated.truncated_draws(150_000, t, k, gen)
    assert np.all(np.abs(z) <= k)
    with mpmath.workprec(100):
        q = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
        w = [q ** abs(i) for i in range(-k, k + 1)]
        probs = [float(x / mpmath.fsum(w)) for x in w]
    assert _ok([(z == i).sum() for i in range(-k, k + 1)], probs)


def test_truncated_delta_and_calibration() -> None:
    """The closed-form δ(K) against a direct sum; the calibrated K is the smallest passing."""
    for t, k0, k in [(Fraction(5, 2), 3, 9), (Fraction(11), 4, 40), (Fraction(1, 3), 1, 2)]:
        with mpmath.workprec(200):
            assert mpmath.almosteq(_truncated.truncated_delta(t, k0, k),
                                   _truncated_delta_bruteforce(t, k0, k), 1e-40)
    for eps, delta, sens in [(1.0, 0.1, 1.0), (0.01, 1e-9, 2.0), (4.0, 0.3, 0.5)]:
        g, t, k = _truncated.truncated_calibration(eps, delta, sens)
        k0 = math.floor(Fraction(sens) / Fraction(g)) + 1
        assert Fraction(k0) / t == Fraction(eps)
        assert _truncated.truncated_delta(t, k0, k) <= delta
        assert _truncated.truncated_delta(t, k0, k - 1) * (1 + mpmath.mpf(2) ** -100) > delta
        ref = dm.LaplaceBoundedNoise(epsilon=eps, delta=delta, sensitivity=sens)
        ref.randomise(0.0)
        assert k * g == pytest.approx(ref._noise_bound, rel=1e-9)


def test_laplace_bounded_noise_class() -> None:
    mech = dpl.LaplaceBoundedNoise(epsilon=1.0, delta=0.1, sensitivity=1.0, random_state=SEED)
    x = mech.randomise(np.zeros(200_000))
    assert np.all(np.abs(x) <= mech._noise_bound)
    # the mass within one sensitivity of the edge is δ(K) <= δ (and close to it)
    edge = np.mean(x <= 1 - mech._noise_bound)
    assert 0.09 < edge <= 0.1 + 5 * math.sqrt(0.1 * 0.9 / x.size)
    assert math.isnan(mech.randomise(math.nan)) and isinstance(mech.randomise(1), float)
    assert dpl.LaplaceBoundedNoise(epsilon=math.inf, delta=0.1, sensitivity=1).randomise(1) == 1
    assert dpl.LaplaceBoundedNoise(epsilon=1e-6, delta=0.3, sensitivity=2.0).randomise(0.0) != 0


# ----------------------------------------------------------------------------- Gaussian
@pytest.mark.parametrize("eps, delta, sens", [(0.5, 1e-5, 1.0), (1.0, 1e-10, 3.0),
                                              (0.01, 0.2, 0.5)])
def test_classic_gaussian_sigma_and_certificate(eps: float, delta: float, sens: float) -> None:
    """diffprivlib's classic σ, certified (ε, δ)-DP on its grid by dpfast's argument."""
    from dpfast._core.rounding import float_up
    from dpfast.mechanisms._discretisation import grid_terms

    mech = dpl.Gaussian(epsilon=eps, delta=delta, sensitivity=sens, random_state=SEED)
    ref = dm.Gaussian(epsilon=eps, delta=delta, sensitivity=sens)
    assert mech._scale == ref._scale and mech.variance(0) == ref.variance(0)
    g = mech._granularity
    assert g == dpfast.granularity(mech._scale)
    e2, d2 = grid_terms(Fraction(eps), Fraction(delta), 1, Fraction(mech._scale) / Fraction(g))
    assert analytic_gaussian_delta(e2, mech._scale, float_up(Fraction(sens) + Fraction(g))) <= d2
    x = mech.randomise(np.zeros(100_000))
    assert np.all(np.rint(x / g) * g == x)
    assert abs(x.std() / mech._scale - 1) < 0.02
    assert _gaussian.classic_calibration(eps, delta, sens, ref._scale)[0] == ref._scale


# ----------------------------------------------------------------------------- permute-and-flip
def _pf_probs(u, c):
    """Exact permute-and-flip probabilities (mpmath, all orders)."""
    import itertools

    u = [mpmath.mpf(v) for v in u]
    coins = [mpmath.exp(c * (v - max(u))) for v in u]
    probs = [mpmath.mpf(0)] * len(u)
    perms = list(itertools.permutations(range(len(u))))
    for perm in perms:
        reach = mpmath.mpf(1)
        for i in perm:
            probs[i] += reach * coins[i]
            reach *= 1 - coins[i]
    return [float(p / len(perms)) for p in probs]


@pytest.mark.parametrize("forced", [False, True])
def test_scalar_permute_and_flip_exact(forced: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """One draw per object (a tree leaf's use) takes the pure-Python path: same exact law as
    dpfast.permute_and_flip, monotonic included, float test or exact continuation."""
    monkeypatch.setattr(_small, "FORCE_EXACT", forced)
    u = [3, 1, 0, 2]
    runs = 6000 if forced else 30_000
    for mono, c in ((False, 0.4), (True, 0.8)):
        out = [dpl.PermuteAndFlip(epsilon=0.8, sensitivity=1, utility=u, monotonic=mono,
                                  random_state=None).randomise() for _ in range(runs)]
        assert _ok(np.bincount(out, minlength=4), _pf_probs(u, c))
    words = _small.words_for(dpfast.default_rng(KEY))
    picks = [_small.uniform_below(words, 3) for _ in range(30_000)]
    assert _ok(np.bincount(picks, minlength=3), [1 / 3] * 3)
    assert dpl.PermuteAndFlip(epsilon=1, sensitivity=1, utility=[5, 5], candidates=["a", "b"],
                              random_state=SEED).randomise() in ("a", "b")


# ----------------------------------------------------------------------------- numpy draws
def test_models_numpy_randomness_on_chacha20() -> None:
    """Under install(), diffprivlib's models and tools turn random_state into a RandomState
    over dpfast's ChaCha20: unseeded one per process, seeds replayable, secure=True and
    RandomState instances unchanged; restored by uninstall()."""
    from diffprivlib.models import forest
    from diffprivlib.tools import quantiles

    orig = _numpy_rng.ORIGINAL_CHECK_RANDOM_STATE
    with dpl.patched():
        assert forest.check_random_state is _numpy_rng.check_random_state
        assert quantiles.check_random_state is _numpy_rng.check_random_state
        assert diffprivlib.utils.check_random_state is orig
        none = forest.check_random_state(None)
        assert isinstance(none, _numpy_rng.DpfastRandomState) and none.unseeded
        assert forest.check_random_state(np.random.mtrand._rand) is none
        assert isinstance(none._bit_generator, dpfast.random.ChaCha20)
        a, b = forest.check_random_state(5), forest.check_random_state(5)
        assert a.randint(1 << 30, size=8).tolist() == b.randint(1 << 30, size=8).tolist()
        assert (forest.check_random_state(6).randint(1 << 30, size=8).tolist()
                != forest.check_random_state(5).randint(1 << 30, size=8).tolist())
        rs = np.random.RandomState(1)
        assert forest.check_random_state(rs) is rs
        assert type(forest.check_random_state(None, True)).__name__ == "SystemRandom"
    assert forest.check_random_state is orig


def test_dpfast_random_state_copies_and_generators() -> None:
    """Copies and pickles never share keystream; a dpfast mechanism given one uses the process
    generator (unseeded) or one cached generator per seeded object."""
    from dpfast.compat._random_state import generator_for, is_unseeded, shared_generator

    seeded = _numpy_rng.check_random_state(11)
    for dup in (copy.copy(seeded), copy.deepcopy(seeded), pickle.loads(pickle.dumps(seeded))):
        assert isinstance(dup, _numpy_rng.DpfastRandomState) and not dup.unseeded
        assert dup.randint(1 << 30, size=4).tolist() != seeded.randint(1 << 30, size=4).tolist()
    shared = _numpy_rng.check_random_state(None)
    assert copy.deepcopy(shared).unseeded and pickle.loads(pickle.dumps(shared)).unseeded
    assert is_unseeded(shared) and generator_for(shared) is shared_generator()
    assert not is_unseeded(seeded) and generator_for(seeded) is generator_for(seeded)
    with pytest.raises(TypeError):
        seeded.seed(3)


def test_models_fitted_while_installed_work_after_uninstall() -> None:
    """Seeded tree fits are replayable under install(); models fitted while installed (they
    hold RandomStates over ChaCha20) predict, pickle and refit after uninstall()."""
    from diffprivlib.models import DecisionTreeClassifier, RandomForestClassifier

    rng = np.random.default_rng(4)
    x = rng.random((300, 3))
    y = (x[:, 0] > 0.5).astype(int)
    kw = dict(epsilon=2.0, bounds=(0, 1), classes=[0, 1], accountant=diffprivlib.BudgetAccountant())
    with dpl.patched():
        t1 = DecisionTreeClassifier(random_state=3, **kw).fit(x, y)
        t2 = DecisionTreeClassifier(random_state=3, **kw).fit(x, y)
        forest_ = RandomForestClassifier(n_estimators=4, **kw).fit(x, y)
        assert np.array_equal(t1.predict_proba(x), t2.predict_proba(x))
    for model in (t1, forest_, pickle.loads(pickle.dumps(forest_))):
        assert model.predict(x).shape == (300,)
    t1.fit(x, y)
    forest_.fit(x, y)


# ----------------------------------------------------------------------------- scalar Laplace
@pytest.mark.parametrize("forced", [False, True])
def test_scalar_discrete_laplace_exact(forced: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pure-Python exact discrete Laplace (certified float inversion, exact comparisons
    where it cannot decide) against the exact pmf."""
    monkeypatch.setattr(_small, "FORCE_EXACT", forced)
    words = _small.words_for(dpfast.default_rng(KEY))
    t = Fraction(7, 2)
    z = np.array([_small.discrete_laplace(words, t, float(t))
                  for _ in range(8000 if forced else 60_000)])
    with mpmath.workprec(80):
        q = mpmath.exp(-1 / mpmath.mpf(3.5))
        probs = [float(q ** abs(k) * (1 - q) / (1 + q)) for k in range(-15, 16)]
    counts = [(z == k).sum() for k in range(-15, 16)] + [(np.abs(z) > 15).sum()]
    assert _ok(counts, probs + [1 - sum(probs)])


def test_scalar_geometric_split_for_grid_scales() -> None:
    """For a grid-sized scale (t ~ 2^40 steps) G = c M + R: the tails P(G >= m) = q^m and
    the low bits (R's nearly uniform part) match the exact geometric law."""
    words = _small.words_for(dpfast.default_rng(KEY))
    t = Fraction(2 ** 40 + 3, 3)
    tf = float(t)
    g = np.array([_small.geometric(words, t, tf) for _ in range(40_000)])
    cuts = [0.25, 0.5, 1.0, 2.0, 3.0]
    counts = np.histogram(g, bins=[0] + [int(c * tf) for c in cuts] + [2 ** 62])[0]
    cdf = [0.0] + [1 - math.exp(-int(c * tf) / tf) for c in cuts] + [1.0]
    assert _ok(counts, np.diff(cdf))
    assert _ok(np.bincount(g % 64, minlength=64), np.full(64, 1 / 64))


def test_scalar_bounded_domain_uses_the_exact_scalar_path() -> None:
    """One value per object (diffprivlib's models): the conditional law on the domain."""
    from scipy import stats

    mechs = [dpl.LaplaceBoundedDomain(epsilon=0.8, sensitivity=1.0, lower=-2.0, upper=3.0,
                                      random_state=SEED + i) for i in range(3)]
    b = mechs[0]._grid()[0]
    out = np.array([mechs[i % 3].randomise(0.5) for i in range(30_000)])
    assert out.min() >= -2.0 and out.max() <= 3.0
    lap = stats.laplace(loc=0.5, scale=b)
    lo, hi = lap.cdf(-2.0), lap.cdf(3.0)
    assert stats.kstest(out, lambda v: (lap.cdf(v) - lo) / (hi - lo)).pvalue > 1e-4


def test_words_handed_out_once_across_threads_and_forks() -> None:
    """The scalar paths' 64-bit words: no word twice across threads, and a forked child
    discards the block its parent drew (it never repeats the parent's words)."""
    import os
    import threading
    import warnings

    words = _small.Words(dpfast.default_rng(KEY))
    got: list[int] = []

    def work() -> None:
        got.extend(words.next() for _ in range(3000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == len(got) == 12_000
    words.next()  # a block is now pre-drawn
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.write(write, repr([words.next() for _ in range(5)]).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = eval(os.read(read, 1 << 16).decode())  # noqa: S307 - our own repr of ints
    parent = [words.next() for _ in range(5)]
    assert not set(child) & set(parent)
