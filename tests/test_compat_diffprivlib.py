"""dpfast.compat.diffprivlib: diffprivlib's classes on dpfast's exact samplers.

diffprivlib's own complete test suite runs under install() in
tests/test_compat_diffprivlib_suite.py; these tests check what it does not: exact output
distributions, the vectorized paths, the patching of tools and models, and ``random_state``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

from tests.helpers import KEY, chisquare_pvalue, dlap_pmf

diffprivlib = pytest.importorskip("diffprivlib")
from diffprivlib import mechanisms as dm  # noqa: E402

import dpfast  # noqa: E402
from dpfast.compat import diffprivlib as dpl  # noqa: E402

SEED = int.from_bytes(KEY[:4], "little")  # diffprivlib also seeds a RandomState: < 2**32


def _chisquare_ok(observed: np.ndarray, probs: np.ndarray) -> bool:
    """Chi-square goodness of fit (:func:`tests.helpers.chisquare_pvalue`, cells pooled to an
    expected count >= 5)."""
    return chisquare_pvalue(observed, probs, min_expected=5) > 1e-4


def _dlap_pmf(k: int, t: Fraction) -> float:
    return float(dlap_pmf(t, k))


@pytest.mark.parametrize("name", ["Laplace", "Geometric", "GeometricTruncated",
                                  "GaussianAnalytic", "GaussianDiscrete", "Snapping",
                                  "Exponential", "PermuteAndFlip", "LaplaceTruncated",
                                  "LaplaceFolded", "GeometricFolded", "LaplaceBoundedDomain",
                                  "Binary", "ExponentialCategorical",
                                  "ExponentialHierarchical", "Uniform", "Gaussian",
                                  "Staircase", "LaplaceBoundedNoise"])
def test_subclass_of_diffprivlibs_class(name: str) -> None:
    cls = getattr(dpl, name)
    assert issubclass(cls, getattr(dm, name)) and issubclass(cls, dm.DPMechanism)
    assert dpl.REPLACEMENTS[getattr(dm, name)] is cls


def test_geometric_exact_distribution_vectorized_and_scalar() -> None:
    mech = dpl.Geometric(epsilon=0.7, sensitivity=2, random_state=SEED)
    t = Fraction(2) / Fraction(0.7)  # exact rational scale Δ/ε
    x = np.full(400_000, 7, dtype=np.int32)
    noisy = mech.randomise(x)
    assert noisy.dtype == np.int32 and np.all(x == 7)  # dtype kept, input untouched
    ks = np.arange(-40, 41)
    probs = np.array([_dlap_pmf(int(k), t) for k in ks])
    counts = np.array([(noisy - 7 == k).sum() for k in ks])
    assert _chisquare_ok(counts, probs)
    scalars = np.array([mech.randomise(7) for _ in range(20_000)]) - 7
    assert isinstance(mech.randomise(7), int)
    assert _chisquare_ok(np.array([(scalars == k).sum() for k in ks]), probs)


def test_geometric_truncated_clamps_exactly() -> None:
    mech = dpl.GeometricTruncated(epsilon=1.0, lower=0, upper=3, random_state=SEED)
    out = mech.randomise(np.full(200_000, 1, dtype=np.int64))
    t = Fraction(1)
    probs = np.array([sum(_dlap_pmf(k, t) for k in range(-60, 0)), _dlap_pmf(0, t),
                      _dlap_pmf(1, t), 1.0])
    probs[3] = 1 - probs[:3].sum()  # everything >= 3
    counts = np.array([(out == v).sum() for v in range(4)])
    assert counts.sum() == out.size and _chisquare_ok(counts, probs)


def test_geometric_truncated_bounds_beyond_the_dtype() -> None:
    mech = dpl.GeometricTruncated(epsilon=1.0, lower=-(2 ** 40), upper=2 ** 63 - 1)
    out = mech.randomise(np.full(1000, 5, dtype=np.int32))
    assert out.dtype == np.int64 and abs(int(np.median(out)) - 5) <= 1  # bounds exceed int32
    clipped = dpl.GeometricTruncated(epsilon=1.0, lower=0, upper=3).randomise(
        np.full(1000, 2, dtype=np.uint8))
    assert clipped.dtype == np.uint8 and clipped.max() <= 3


def test_laplace_grid_scale_variance_and_guarantee() -> None:
    mech = dpl.Laplace(epsilon=0.5, delta=0.0, sensitivity=2.0, random_state=SEED)
    scale, g = mech._calibration()
    assert (2.0 + g) / scale <= 0.5 < (2.0 + g) / scale * (1 + 1e-12)  # eps' = (Δ+g)/b
    x = np.full(10 ** 6, 0.3)
    noisy = mech.randomise(x)
    grid = np.rint(0.3 / g) * g
    assert np.all((noisy - grid) / g == np.rint((noisy - grid) / g))  # on the grid
    noise = noisy - grid
    assert abs(np.mean(np.abs(noise)) / scale - 1) < 0.005  # E|X| ≈ b; SE 0.1%
    assert abs(np.var(noise) / mech.variance(0) - 1) < 0.015  # SE ~0.45%
    assert mech.variance(0) == pytest.approx(2 * scale ** 2, rel=1e-9)
    assert mech.bias(0.3) == grid - 0.3 and abs(mech.bias(0.3)) <= g / 2


def test_laplace_with_delta_uses_relaxed_epsilon() -> None:
    mech = dpl.Laplace(epsilon=0.0, delta=0.5, sensitivity=1.0)
    scale, g = mech._calibration()
    assert (1 + g) / scale <= math.log(2) < (1 + g) / scale * (1 + 1e-12)


def test_gaussian_analytic_is_dpfasts_mechanism() -> None:
    mech = dpl.GaussianAnalytic(epsilon=0.8, delta=1e-6, sensitivity=1.5, random_state=SEED)
    ref = dpfast.GaussianMechanism(epsilon=0.8, delta=1e-6, sensitivity=1.5)
    assert mech._scale == ref.sigma
    assert mech._scale == pytest.approx(dm.GaussianAnalytic(epsilon=0.8, delta=1e-6,
                                                             sensitivity=1.5)._scale, rel=1e-6)
    noise = mech.randomise(np.zeros(10 ** 6))
    assert abs(np.std(noise) / mech._scale - 1) < 0.005


def test_gaussian_discrete_exact_distribution() -> None:
    mech = dpl.GaussianDiscrete(epsilon=1.0, delta=1e-3, sensitivity=1, random_state=SEED)
    sigma = mech._scale
    # diffprivlib's mechanism is scalar: the tight one-coordinate calibration (CKS20 Thm. 7)
    assert sigma == dpfast.DiscreteGaussianMechanism(epsilon=1.0, delta=1e-3,
                                                     max_changed=1).sigma
    assert sigma < dpfast.DiscreteGaussianMechanism(epsilon=1.0, delta=1e-3).sigma
    out = mech.randomise(np.zeros(300_000, dtype=np.int64))
    ks = np.arange(-30, 31)
    with mpmath.workdps(30):
        w = [mpmath.exp(-mpmath.mpf(int(k)) ** 2 / (2 * mpmath.mpf(sigma) ** 2)) for k in ks]
        z = mpmath.fsum(w)
        probs = np.array([float(v / z) for v in w])
    assert _chisquare_ok(np.array([(out == k).sum() for k in ks]), probs)


def test_snapping_guarantee_and_bounds() -> None:
    mech = dpl.Snapping(epsilon=0.5, sensitivity=2.0, lower=-10.0, upper=30.0,
                        random_state=SEED)
    lam, b_used = mech._params()
    assert dpfast.snapping_epsilon(lam, b_used, 1.0) <= 0.5
    out = mech.randomise(np.array([-50.0, 0.0, 10.0, 100.0]))
    assert np.all((out >= -10.0) & (out <= 30.0))
    small = dpl.Snapping(epsilon=1.0, sensitivity=1, lower=0, upper=1)  # bound < lambda
    vals = small.randomise(np.full(1000, 0.5))
    assert np.all((vals >= 0) & (vals <= 1))


def _exp_probs(u, eps, sens, measure=None, monotonic=False):
    c = eps / sens / (1 if monotonic else 2)
    w = np.exp(c * (np.asarray(u, float) - max(u))) * (1 if measure is None else
                                                      np.asarray(measure, float))
    return w / w.sum()


def test_exponential_exact_with_integer_measure_and_batch() -> None:
    u, m = [3.0, 1.0, 2.5, 0.0], [1, 3, 0, 2]
    mech = dpl.Exponential(epsilon=1.2, sensitivity=1.0, utility=u, measure=m,
                           random_state=SEED)
    picks = mech.randomise(size=200_000)
    counts = np.bincount(picks, minlength=4)
    assert counts[2] == 0 and _chisquare_ok(counts, _exp_probs(u, 1.2, 1.0, m))
    mono = dpl.Exponential(epsilon=1.2, sensitivity=1.0, utility=u, monotonic=True,
                           random_state=SEED)
    singles = np.array([mono.randomise() for _ in range(20_000)])
    assert _chisquare_ok(np.bincount(singles, minlength=4), _exp_probs(u, 1.2, 1.0,
                                                                       monotonic=True))


@pytest.mark.parametrize("forced", [False, True])
def test_exponential_float_measure_exact(forced: bool, monkeypatch) -> None:
    from dpfast.compat import _measure

    monkeypatch.setattr(_measure, "FORCE_EXACT", forced)
    u, m = [1.0, 0.0, 0.5, 3.0], [0.25, 1.5, 0.125, 0.0]
    mech = dpl.Exponential(epsilon=2.0, sensitivity=1.0, utility=u, measure=m,
                           candidates=["a", "b", "c", "d"], random_state=SEED)
    picks = mech.randomise(size=3_000 if forced else 200_000)
    counts = np.array([(picks == s).sum() for s in "abcd"])
    assert counts[3] == 0  # zero measure: never
    assert _chisquare_ok(counts[:3], _exp_probs(u[:3], 2.0, 1.0, m[:3]))
    assert mech.randomise() in ("a", "b", "c")


def test_exponential_measure_fast_path_is_certified() -> None:
    from dpfast.compat import _measure

    gen = dpfast.default_rng(KEY)
    u = np.linspace(-50, 0, 1000)
    m = np.geomspace(1e-6, 1e6, 1000)
    fast = _measure.sample_measured(u, m, Fraction(1, 3), gen, 100_000)
    w = m * np.exp((u - u.max()) / 3)
    assert _chisquare_ok(np.bincount(fast, minlength=1000), w / w.sum())
    with pytest.raises(ValueError, match="measure"):
        _measure.sample_measured(u[:2], [0.0, 0.0], Fraction(1), gen, 1)


def _pf_probs(u, eps, sens):
    u = np.asarray(u, float)
    coins = np.exp(eps * (u - u.max()) / (2 * sens))
    probs = np.zeros(u.size)
    for perm in itertools.permutations(range(u.size)):
        reach = 1.0
        for i in perm:
            probs[i] += reach * coins[i]
            reach *= 1 - coins[i]
    return probs / math.factorial(u.size)


def test_permute_and_flip_exact_distribution() -> None:
    u = [2.0, 1.0, 0.0, 1.5]
    mech = dpl.PermuteAndFlip(epsilon=1.5, sensitivity=1.0, utility=u, random_state=SEED)
    counts = np.bincount(mech.randomise(size=200_000), minlength=4)
    assert _chisquare_ok(counts, _pf_probs(u, 1.5, 1.0))
    mono = dpl.PermuteAndFlip(epsilon=1.5, sensitivity=1.0, utility=u, monotonic=True,
                              random_state=SEED)
    counts = np.bincount(mono.randomise(size=200_000), minlength=4)
    assert _chisquare_ok(counts, _pf_probs(u, 1.5, 0.5))


def test_random_state_mapping() -> None:
    a = dpl.Geometric(epsilon=1.0, random_state=7).randomise(np.zeros(50, np.int64))
    b = dpl.Geometric(epsilon=1.0, random_state=7).randomise(np.zeros(50, np.int64))
    c = dpl.Geometric(epsilon=1.0).randomise(np.zeros(50, np.int64))
    d = dpl.Geometric(epsilon=1.0).randomise(np.zeros(50, np.int64))
    assert np.array_equal(a, b) and not np.array_equal(c, d)
    rs = np.random.RandomState(3)
    e = dpl.Geometric(epsilon=1.0, random_state=rs).randomise(np.zeros(50, np.int64))
    f = dpl.Geometric(epsilon=1.0, random_state=rs).randomise(np.zeros(50, np.int64))
    assert not np.array_equal(e, f)  # each mechanism takes fresh key bytes
    with pytest.raises(ValueError, match="cannot be used to seed"):
        dpl.Geometric(epsilon=1.0, random_state="seed")


def test_scalar_buffer_hands_each_value_out_once_across_threads_and_forks() -> None:
    import os
    import threading
    import warnings

    mech = dpl.Laplace(epsilon=1.0, sensitivity=1.0, random_state=SEED)
    results: list[float] = []

    def work() -> None:
        values = [mech.randomise(0.0) for _ in range(3000)]
        results.extend(values)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == len(results) == 12_000  # no noise value handed out twice
    mech.randomise(0.0)  # the buffer now holds pre-drawn values
    read, write = os.pipe()
    with warnings.catch_warnings():  # Python >= 3.12 warns about fork in threaded processes
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child: report its next values, then exit without pytest's teardown
        os.write(write, repr([mech.randomise(0.0) for _ in range(5)]).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = eval(os.read(read, 1 << 16).decode())  # noqa: S307 - our own repr of floats
    parent = [mech.randomise(0.0) for _ in range(5)]
    assert not set(child) & set(parent)


def test_bad_arrays_are_rejected() -> None:
    with pytest.raises(TypeError, match="integer"):
        dpl.Geometric(epsilon=1.0).randomise(np.array([1.5]))
    with pytest.raises(TypeError, match="number"):
        dpl.Laplace(epsilon=1.0, sensitivity=1).randomise(np.array(["a"]))
    with pytest.raises(OverflowError):
        dpl.Geometric(epsilon=0.01).randomise(np.array([127] * 1000, dtype=np.int8))


def test_install_patches_tools_and_models_and_restores() -> None:
    import diffprivlib.models.naive_bayes as nb
    import diffprivlib.tools.histograms as hg
    import diffprivlib.tools.utils as tu

    before = (hg.GeometricTruncated, tu.LaplaceTruncated, nb.GeometricTruncated,
              diffprivlib.tools.histogram, dm.Laplace)
    with dpl.patched():
        assert dpl.is_installed()
        assert hg.GeometricTruncated is dpl.GeometricTruncated
        assert tu.LaplaceTruncated is dpl.LaplaceTruncated
        assert nb.GeometricTruncated is dpl.GeometricTruncated
        assert diffprivlib.tools.histogram is dpl.histogram and hg.histogram is dpl.histogram
        assert dm.Laplace is dpl.Laplace
        with dpl.patched():  # nesting
            pass
        assert dpl.is_installed()
    assert not dpl.is_installed()
    assert before == (hg.GeometricTruncated, tu.LaplaceTruncated, nb.GeometricTruncated,
                      diffprivlib.tools.histogram, dm.Laplace)


def test_patched_histogram_distribution_and_accounting() -> None:
    data = np.repeat(np.arange(5) + 0.5, [0, 3, 10, 1, 6])
    acc = diffprivlib.BudgetAccountant()
    reps = 20_000
    with dpl.patched():
        first, edges = diffprivlib.tools.histogram(data, epsilon=0.9, bins=5, range=(0, 5),
                                                   random_state=SEED, accountant=acc)
        again, _ = diffprivlib.tools.histogram(data, epsilon=0.9, bins=5, range=(0, 5),
                                               random_state=SEED, accountant=acc)
        sample = np.stack([dpl.histogram(data, epsilon=0.9, bins=5, range=(0, 5))[0]
                           for _ in range(reps // 50)])
    assert np.array_equal(first, again) and np.array_equal(edges, np.arange(6.0))
    assert acc.spent_budget == [(0.9, 0), (0.9, 0)]
    assert first.dtype == np.histogram(data, bins=5)[0].dtype and np.all(first >= 0)
    # bin 1 (true count 3): exact clamped two-sided geometric, t = 1/0.9
    t = Fraction(1) / Fraction(0.9)
    vals = sample[:, 1]
    ks = np.arange(0, 25)
    probs = np.array([_dlap_pmf(int(k) - 3, t) for k in ks])
    probs[0] = sum(_dlap_pmf(k, t) for k in range(-80, -2))
    assert _chisquare_ok(np.array([(vals == k).sum() for k in ks]), probs)


def test_patched_histogramdd_density_and_tools() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((500, 2))
    with dpl.patched():
        hist, _, _ = diffprivlib.tools.histogram2d(x[:, 0], x[:, 1], epsilon=1.0, bins=4,
                                                    range=[(0, 1), (0, 1)], density=True)
        count = diffprivlib.tools.count_nonzero(x[:, 0] > 0.5, epsilon=1.0, random_state=SEED)
        count2 = diffprivlib.tools.count_nonzero(x[:, 0] > 0.5, epsilon=1.0,
                                                 random_state=SEED)
        mean = diffprivlib.tools.mean(x[:, 0], epsilon=1.0, bounds=(0, 1))
        quant = diffprivlib.tools.median(x[:, 0], epsilon=1.0, bounds=(0, 1))
        assert diffprivlib.tools.quantiles.Exponential is dpl.Exponential
    assert hist.shape == (4, 4) and np.sum(hist) * (1 / 16) == pytest.approx(1.0)
    assert count == count2 and abs(count - np.count_nonzero(x[:, 0] > 0.5)) < 40
    assert 0 <= mean <= 1 and 0 <= quant <= 1


def test_patched_model_fits() -> None:
    from diffprivlib.models import GaussianNB

    rng = np.random.default_rng(1)
    x = rng.random((200, 2))
    y = (x[:, 0] > 0.5).astype(int)
    with dpl.patched():
        clf = GaussianNB(epsilon=5.0, bounds=([0, 0], [1, 1]), random_state=SEED).fit(x, y)
    assert clf.score(x, y) > 0.6


def test_laplace_bounded_domain_exact_conditional_distribution() -> None:
    from dpfast.compat.diffprivlib._bounded import _loss

    mech = dpl.LaplaceBoundedDomain(epsilon=0.8, sensitivity=1.0, lower=-2.0, upper=3.0,
                                    random_state=SEED)
    b, g, k, lo, hi = mech._grid()
    # calibration: the worst-case loss is below epsilon, and b is the smallest such scale
    assert _loss(b, g, k, lo, hi) <= 0.8
    assert _loss(b * (1 - 1e-9), g, k, lo, hi) > 0.8 * (1 - 1e-12)
    assert b == pytest.approx(dm.LaplaceBoundedDomain(epsilon=0.8, sensitivity=1.0, lower=-2.0,
                                                      upper=3.0)._find_scale(), rel=1e-8)
    out = mech.randomise(np.full(200_000, 0.5))
    assert out.min() >= -2.0 and out.max() <= 3.0
    # the grid (g ~ 1e-12) conditional law equals Laplace(0.5, b) truncated to [-2, 3]
    lap = stats.laplace(loc=0.5, scale=b)
    lo, hi = lap.cdf(-2.0), lap.cdf(3.0)
    assert stats.kstest(out, lambda v: (lap.cdf(v) - lo) / (hi - lo)).pvalue > 1e-4
    assert math.isnan(mech.randomise(float("nan")))


def test_patched_var_uses_bounded_domain() -> None:
    import diffprivlib.tools.utils as tu

    x = np.random.default_rng(2).random(1000)
    with dpl.patched():
        assert tu.LaplaceBoundedDomain is dpl.LaplaceBoundedDomain
        v1 = diffprivlib.tools.var(x, epsilon=1.0, bounds=(0, 1), random_state=SEED)
        v2 = diffprivlib.tools.var(x, epsilon=1.0, bounds=(0, 1), random_state=SEED)
    assert v1 == v2 and 0 <= v1 <= 1 and abs(v1 - np.var(x)) < 0.05


@settings(max_examples=20)
@given(hnp.arrays(st.sampled_from([np.int8, np.int32, np.int64, np.uint16]),
                  hnp.array_shapes(max_dims=3, max_side=6),
                  elements=st.integers(0, 100)),
       st.integers(-5, 50), st.integers(0, 60))
def test_geometric_truncated_arrays_property(x, lower, width) -> None:
    upper = lower + width
    before = x.copy()
    out = dpl.GeometricTruncated(epsilon=0.5, lower=lower, upper=upper,
                                 random_state=SEED).randomise(x)
    assert np.array_equal(x, before) and out.shape == x.shape
    assert np.all((out >= lower) & (out <= upper))
    fits = np.iinfo(x.dtype).min <= lower and upper <= np.iinfo(x.dtype).max
    assert out.dtype == (x.dtype if fits else np.int64)


@pytest.mark.slow
@settings(max_examples=20)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=8),
                  elements=st.floats(-1e6, 1e6)),
       st.floats(0.01, 10.0), st.floats(0.01, 100.0))
def test_laplace_arrays_property(x, eps, sens) -> None:
    before = x.copy()
    mech = dpl.Laplace(epsilon=eps, sensitivity=sens, random_state=SEED)
    out = mech.randomise(x)
    _, g = mech._calibration()
    assert np.array_equal(x, before) and out.shape == x.shape and out.dtype == np.float64
    assert np.all(np.isfinite(out))
    k = out / g  # outputs are grid values (exact multiples of g, rounded once)
    assert np.all(np.abs(k - np.rint(k)) <= np.abs(k) * 2.0 ** -52 + 1e-9)


def _loss_reference(b: float, g: float, k: int, lo: int | None, hi: int | None) -> mpmath.mpf:
    """The bounded-domain loss (class docs of LaplaceBoundedDomain) in 256-bit arithmetic,
    in its direct form."""
    with mpmath.workprec(256):
        gb = mpmath.mpf(g) / mpmath.mpf(b)
        if lo is None and hi is None:
            return k * gb
        q = mpmath.exp(-gb)
        if lo is None or hi is None:
            return k * gb + mpmath.log(1 + q - q ** (k + 1))
        n = max(hi - lo, 0)
        m = min(k, n)
        return m * gb + mpmath.log((1 + q - q ** (m + 1) - q ** (n - m + 1)) / (1 - q ** (n + 1)))


@settings(max_examples=200)
@given(sens=st.floats(1e-6, 1e6), ratio=st.floats(1e-3, 1e6),
       lower=st.sampled_from([0.0, -1.0, -1e9, -math.inf]),
       width=st.sampled_from([1e-6, 1.0, 1e3, 1e12, math.inf]))
def test_laplace_bounded_domain_float_loss_matches_exact(sens, ratio, lower, width) -> None:
    """The float loss used by the (cached) calibration is within 2^-48 of the 256-bit value,
    well inside its 2^-40 allowance."""
    from dpfast.compat.diffprivlib._bounded import _layout, _loss

    b = sens * ratio
    layout = _layout(b, sens, lower, lower + width)
    exact = _loss_reference(b, *layout)
    value = _loss(b, *layout)
    assert abs(mpmath.mpf(value) - exact) <= 2.0 ** -48 * abs(exact) + 2.0 ** -200  # ref: ~0


@pytest.mark.parametrize("lower, upper", [(0.0, math.inf), (-math.inf, 4.0),
                                          (-math.inf, math.inf)])
def test_laplace_bounded_domain_infinite_bounds(lower: float, upper: float) -> None:
    """diffprivlib's PCA uses [0, inf): the half-line (and whole-line) loss is calibrated, the
    outputs stay in the domain, NaN and inf pass through, and huge values stay exact."""
    mech = dpl.LaplaceBoundedDomain(epsilon=0.5, sensitivity=2.0, lower=lower, upper=upper,
                                    random_state=SEED)
    b, g, k, lo, hi = mech._grid()
    assert _loss_reference(b, g, k, lo, hi) <= 0.5
    if lower == -math.inf and upper == math.inf:
        assert b == pytest.approx(4.0, rel=1e-9)  # plain discrete Laplace: (Δ + g) / b = ε
    out = mech.randomise(np.full(100_000, 0.0 if math.isfinite(lower) else 4.0))
    assert out.min() >= lower and out.max() <= upper
    edge = np.array([np.nan, 1e30 if upper == math.inf else -1e30])
    res = mech.randomise(edge)
    assert math.isnan(res[0]) and res[1] == pytest.approx(edge[1], rel=1e-12)
    assert edge[1] in (1e30, -1e30)  # input untouched


def test_nan_and_inf_pass_through_laplace_and_gaussian() -> None:
    """diffprivlib returns NaN + noise = NaN (diffprivlib.tools.mean(..., nan)) and inf."""
    for mech in (dpl.Laplace(epsilon=1.0, sensitivity=1.0, random_state=SEED),
                 dpl.GaussianAnalytic(epsilon=1.0, delta=1e-6, sensitivity=1.0,
                                      random_state=SEED)):
        assert math.isnan(mech.randomise(float("nan")))
        assert mech.randomise(math.inf) == math.inf
        out = mech.randomise(np.array([1.0, np.nan, -np.inf]))
        assert math.isnan(out[1]) and out[2] == -np.inf and np.isfinite(out[0])


def test_permute_and_flip_under_install_does_not_recurse() -> None:
    """install() rebinds diffprivlib.mechanisms.PermuteAndFlip to dpfast's class; creating
    one (directly, or inside DecisionTreeClassifier) must still work."""
    from diffprivlib.models import DecisionTreeClassifier

    x = np.random.default_rng(3).random((60, 2))
    y = (x[:, 0] > 0.5).astype(int)
    with dpl.patched():
        mech = dm.PermuteAndFlip(epsilon=1.0, sensitivity=1.0, utility=[1.0, 2.0, 3.0],
                                 random_state=SEED)
        assert isinstance(mech, dpl.PermuteAndFlip) and mech.randomise() in (0, 1, 2)
        tree = DecisionTreeClassifier(epsilon=5.0, bounds=(0, 1), classes=[0, 1],
                                      random_state=SEED).fit(x, y)
    assert set(tree.predict(x)) <= {0, 1}
    assert mech.randomise() in (0, 1, 2)  # created while installed, works after uninstall()


def test_unseeded_mechanisms_share_one_generator_and_blocks() -> None:
    """diffprivlib builds a new mechanism per tools call: unseeded ones share the process's
    generator and noise blocks (no per-object key or block), seeded ones keep their own."""
    from dpfast.compat import _random_state as rs

    a = dpl.Laplace(epsilon=1.0, sensitivity=1.0)
    b = dpl.Laplace(epsilon=1.0, sensitivity=1.0)
    assert a._gen is b._gen is rs.shared_generator() and a._buffer is rs.SHARED_BUFFERS
    vals = [a.randomise(0.0), b.randomise(0.0), a.randomise(0.0)]
    assert len(set(vals)) == 3  # each pre-drawn value handed out once
    seeded = dpl.Laplace(epsilon=1.0, sensitivity=1.0, random_state=SEED)
    assert seeded._gen is not a._gen and seeded._buffer is not rs.SHARED_BUFFERS
    # same numbers under different laws never share a block
    g = dpl.Geometric(epsilon=0.5, sensitivity=1)
    d = dpl.GaussianDiscrete(epsilon=1.0, delta=1e-3)
    assert isinstance(g.randomise(0), int) and isinstance(d.randomise(0), int)


@pytest.mark.parametrize("epsilon, delta", [(0.7, 0.0), (1.3, 0.25), (2.5, 0.0)])
def test_binary_exact_flip_probability(epsilon: float, delta: float) -> None:
    """P[flip] = (1 - δ) / (e^ε + 1) exactly (diffprivlib's law; its constructor takes no
    delta, its randomise reads the attribute)."""
    mech = dpl.Binary(epsilon=epsilon, value0="a", value1="b", random_state=SEED)
    mech.delta = delta
    assert isinstance(mech, dm.Binary)
    n = 60_000
    flips = sum(mech.randomise("a") == "b" for _ in range(n))
    p = float((1 - mpmath.mpf(delta)) / (1 + mpmath.exp(epsilon)))
    assert _chisquare_ok(np.array([n - flips, flips]), np.array([1 - p, p]))
    assert dpl.Binary(epsilon=math.inf, value0="a", value1="b").randomise("b") == "b"


def test_bernoulli_dyadic_exact() -> None:
    from dpfast.compat.diffprivlib._categorical import bernoulli_dyadic

    class Words:
        """A generator stub that returns scripted 64-bit words."""

        def __init__(self, words: list[int]) -> None:
            self.words = list(words)

        def integers(self, low: int, high: int, dtype: object = None) -> int:
            assert (low, high) == (0, 1 << 64)
            return self.words.pop(0)

    # U < p decided on the binary expansion, word by word: P[True] = p exactly
    p = 2.0 ** -60 + 2.0 ** -100  # two words: digits 2^4 and 2^28
    assert bernoulli_dyadic(Words([(1 << 4) - 1]), p)
    assert not bernoulli_dyadic(Words([(1 << 4) + 1]), p)
    assert bernoulli_dyadic(Words([1 << 4, (1 << 28) - 1]), p)
    assert not bernoulli_dyadic(Words([1 << 4, 1 << 28]), p)  # U == p: not below
    digit = int(Fraction(0.3) * (1 << 64))
    assert bernoulli_dyadic(Words([digit - 1]), 0.3)
    assert not bernoulli_dyadic(Words([digit + 1]), 0.3)
    gen = dpfast.default_rng(KEY)
    for q in (0.0, 1.0):
        assert bernoulli_dyadic(gen, q) == bool(q)
    n = 5_000
    hits = sum(bernoulli_dyadic(gen, 0.3) for _ in range(n))
    assert _chisquare_ok(np.array([n - hits, hits]), np.array([0.7, 0.3]))


def test_exponential_categorical_exact_distribution() -> None:
    utility = [["A", "B", 1], ["A", "C", 2], ["B", "C", 2]]
    mech = dpl.ExponentialCategorical(epsilon=1.5, utility_list=utility, random_state=SEED)
    assert isinstance(mech, dm.ExponentialCategorical)
    targets = list(mech._normalising_constant)
    n = 60_000
    out = [mech.randomise("A") for _ in range(n)]
    u = {"A": 0, "B": 1, "C": 2}
    w = [mpmath.exp(-mpmath.mpf(1.5) * u[t] / (2 * 2)) for t in targets]  # Δ = 2, not balanced
    probs = np.array([float(x / mpmath.fsum(w)) for x in w])
    assert _chisquare_ok(np.array([out.count(t) for t in targets]), probs)


def test_exponential_hierarchical_and_install() -> None:
    hierarchy = [["A", "B"], ["C", "D"]]
    with dpl.patched():
        mech = dm.ExponentialHierarchical(epsilon=2.0, hierarchy=hierarchy, random_state=SEED)
    assert isinstance(mech, dpl.ExponentialHierarchical)
    assert mech.randomise("A") in {"A", "B", "C", "D"}  # still works after uninstall()
    n = 40_000
    out = [mech.randomise("A") for _ in range(n)]
    targets = list(mech._normalising_constant)
    c = 2.0 / (1 if mech._balanced_tree else 2) / mech._sensitivity
    w = [mpmath.exp(-c * mpmath.mpf(0 if t == "A" else mech._get_utility("A", t)))
         for t in targets]
    probs = np.array([float(x / mpmath.fsum(w)) for x in w])
    assert _chisquare_ok(np.array([out.count(t) for t in targets]), probs)


# constructor arguments and an input for every replaced class (diffprivlib names)
_MADE_WHILE_INSTALLED = {
    "Laplace": (dict(epsilon=1.0, sensitivity=1.0), 1.0),
    "LaplaceTruncated": (dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=2), 1.0),
    "LaplaceFolded": (dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=2), 1.0),
    "LaplaceBoundedDomain": (dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=2), 1.0),
    "Geometric": (dict(epsilon=1.0), 3),
    "GeometricTruncated": (dict(epsilon=1.0, lower=0, upper=5), 3),
    "GeometricFolded": (dict(epsilon=1.0, lower=0, upper=5), 3),
    "GaussianAnalytic": (dict(epsilon=1.0, delta=1e-5, sensitivity=1.0), 1.0),
    "GaussianDiscrete": (dict(epsilon=1.0, delta=1e-5), 3),
    "Snapping": (dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=2), 1.0),
    "Exponential": (dict(epsilon=1.0, sensitivity=1.0, utility=[1, 2, 3]), None),
    "PermuteAndFlip": (dict(epsilon=1.0, sensitivity=1.0, utility=[1, 2, 3]), None),
    "Binary": (dict(epsilon=1.0, value0="x", value1="y"), "x"),
    "ExponentialCategorical": (dict(epsilon=1.0, utility_list=[["x", "y", 1]]), "x"),
    "ExponentialHierarchical": (dict(epsilon=1.0, hierarchy=[["x", "y"], ["z"]]), "x"),
    "Uniform": (dict(delta=0.1, sensitivity=1.0), 1.0),
    "Gaussian": (dict(epsilon=0.5, delta=1e-5, sensitivity=1.0), 1.0),
    "Staircase": (dict(epsilon=1.0, sensitivity=1.0), 1.0),
    "LaplaceBoundedNoise": (dict(epsilon=1.0, delta=0.1, sensitivity=1.0), 1.0),
}


def test_objects_created_while_installed_work_after_uninstall() -> None:
    """Every replaced class, created through diffprivlib's own name while installed (seeded
    and unseeded), is dpfast's and keeps working -- scalar calls, fresh and buffered --
    after uninstall() restored diffprivlib."""
    assert {cls.__name__ for cls in dpl.REPLACEMENTS} == set(_MADE_WHILE_INSTALLED)
    made = []
    with dpl.patched():
        for name, (kwargs, value) in _MADE_WHILE_INSTALLED.items():
            for seed in (None, SEED):
                mech = getattr(dm, name)(**kwargs, random_state=seed)
                assert type(mech) is getattr(dpl, name)
                mech.randomise(value)
                made.append((mech, value))
    assert not dpl.is_installed() and dm.Laplace is not dpl.Laplace
    for mech, value in made:
        for _ in range(3):
            mech.randomise(value)


def test_uniform_exact_window_and_tv_bound() -> None:
    """Uniform: the window is the smallest odd W with k / W <= δ (the (0, δ) bound, exact),
    and the outputs are exactly uniform on the W grid points around the rounded value."""
    mech = dpl.Uniform(delta=0.2, sensitivity=3.0, random_state=SEED)
    g, w, m = mech._window()
    k = math.floor(Fraction(3.0) / Fraction(g)) + 1
    assert w % 2 == 1 and Fraction(k, w) <= Fraction(0.2) < Fraction(k, w - 2)
    assert m * g == pytest.approx(3.0 / (2 * 0.2), rel=1e-9)
    out = mech.randomise(np.full(200_000, 1.0))
    assert np.all(np.abs(out - 1.0) <= m * g)
    # exactly uniform: 20 equal-width bins of the window have equal probability
    counts = np.histogram((out - 1.0) / g + m, bins=20, range=(0, w))[0]
    assert _chisquare_ok(counts, np.full(20, 1 / 20))
    assert math.isnan(mech.randomise(float("nan")))
    assert dpl.Uniform(delta=0.5, sensitivity=0.0).randomise(2.5) == 2.5
