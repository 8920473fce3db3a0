"""PldAccountant: reference values, closed forms, bounds, memory, DP-SGD, command line."""

from __future__ import annotations

import json
import math
import pathlib
import subprocess
import sys
import tracemalloc

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast.accounting import PldAccountant, calibrate_noise_multiplier, dpsgd_epsilon
from dpfast.accounting import events as ev
from dpfast.accounting.pld import UnsupportedEventError
from tests.forkrun import cli_here
from tests.helpers import SUBPROCESS_TIMEOUT_S

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = json.loads((ROOT / "tests" / "data" / "pld_reference.json").read_text())


def _event(q: float, sigma: float) -> ev.DpEvent:
    return ev.Gaussian(sigma) if q >= 1.0 else ev.PoissonSampled(ev.Gaussian(sigma), q)


# ----------------------------------------------------------------- dp_accounting reference


@pytest.mark.parametrize(
    "ref", REFERENCE, ids=lambda r: f"q{r['q']:.4g}-s{r['sigma']:g}-T{r['steps']}-d{r['delta']:g}")
def test_matches_dp_accounting_and_brackets(ref: dict) -> None:
    acct = PldAccountant().compose(_event(ref["q"], ref["sigma"]), ref["steps"])
    lower, upper = acct.get_epsilon_bounds(ref["delta"])
    theirs = ref["epsilon"]
    assert 0.995 * theirs <= upper <= 1.005 * theirs, (upper, theirs)
    assert lower <= theirs  # dp_accounting's pessimistic value is above the true epsilon
    assert lower <= upper


def test_reference_spans_the_required_ranges() -> None:
    qs = [r["q"] for r in REFERENCE if r["q"] < 1.0]
    assert len(REFERENCE) >= 30
    assert min(qs) <= 1e-3 and max(qs) >= 0.5
    assert min(r["sigma"] for r in REFERENCE) <= 0.5 and max(r["sigma"] for r in REFERENCE) >= 10
    assert min(r["steps"] for r in REFERENCE) == 1 and max(r["steps"] for r in REFERENCE) >= 1e5
    assert min(r["delta"] for r in REFERENCE) <= 1e-8 and max(r["delta"] for r in REFERENCE) >= 1e-3


def test_live_cross_check_with_dp_accounting() -> None:
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant as ppa

    for q, s, t, d in [(0.02, 1.2, 200, 1e-6)]:
        theirs = ppa.PLDAccountant(value_discretization_interval=1e-4)
        theirs.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(s)), t)
        ours = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(s), q), t)
        assert ours.get_epsilon(d) == pytest.approx(theirs.get_epsilon(d), rel=5e-3)
    for q, b, t, d in [(0.05, 2.0, 50, 1e-6)]:
        theirs = ppa.PLDAccountant(value_discretization_interval=1e-4)
        theirs.compose(dpa.PoissonSampledDpEvent(q, dpa.LaplaceDpEvent(b)), t)
        ours = PldAccountant().compose(ev.PoissonSampled(ev.Laplace(b), q), t)
        assert ours.get_epsilon(d) == pytest.approx(theirs.get_epsilon(d), rel=5e-3)


# ----------------------------------------------------------------- closed forms



@pytest.fixture(autouse=True)
def _mp_precision():
    """This module's mpmath precision, for its tests only (a module-level assignment
    would leak into every test module collected after it)."""
    with mpmath.workdps(40):
        yield



def _balle_wang_delta(sigma: float, eps: float) -> mpmath.mpf:
    s, e = mpmath.mpf(sigma), mpmath.mpf(eps)
    return mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0, 10.0])
def test_gaussian_matches_balle_wang(sigma: float) -> None:
    acct = PldAccountant().compose(ev.Gaussian(sigma))
    for eps in [0.0, 0.1, 0.5, 1.0, 2.0, 4.0]:
        exact = float(_balle_wang_delta(sigma, eps))
        if exact < 1e-14:
            continue
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up
        assert up <= exact * (1 + 1e-3) + 1e-12
    for delta in [1e-3, 1e-6, 1e-9]:
        lo_e, hi_e = mpmath.mpf(0), mpmath.mpf(60)
        for _ in range(80):  # bisection: delta(eps) decreases
            mid = (lo_e + hi_e) / 2
            lo_e, hi_e = (mid, hi_e) if _balle_wang_delta(sigma, mid) > delta else (lo_e, mid)
        exact = float(hi_e)
        up = acct.get_epsilon(delta)
        assert exact <= up <= exact * (1 + 1e-3) + 1e-9


def _rr_delta(eps0: float, k: int, count: int, eps: float) -> float:
    """Exact delta of ``count`` k-ary randomized responses (enumerating the loss counts)."""
    e0 = mpmath.mpf(eps0)
    den = mpmath.exp(e0) + k - 1
    ph, pl, pz = mpmath.exp(e0) / den, 1 / den, (k - 2) / den
    total = mpmath.mpf(0)
    for a in range(count + 1):  # a losses +eps0, b losses -eps0, the rest 0
        for b in range(count - a + 1):
            c = count - a - b
            prob = (mpmath.factorial(count) / (mpmath.factorial(a) * mpmath.factorial(b)
                    * mpmath.factorial(c)) * ph**a * pl**b * pz**c)
            loss = e0 * (a - b)
            if loss > eps:
                total += prob * (1 - mpmath.exp(eps - loss))
    return float(total)


@pytest.mark.parametrize(("eps0", "k", "count"), [(1.0, 2, 1), (0.5, 3, 4), (2.0, 2, 7)])
def test_randomized_response_exact(eps0: float, k: int, count: int) -> None:
    acct = PldAccountant().compose(ev.RandomizedResponse(eps0, k), count)
    for eps in [0.3, 1.1, 2.7]:  # off the atoms (within one grid step of an atom the
        # connect-the-dots curve is above the exact one by up to ~ interval * mass)
        exact = _rr_delta(eps0, k, count, eps)
        lo, up = acct.get_delta_bounds(eps)
        assert lo - 1e-12 <= exact <= up + 1e-15
        assert up <= exact * (1 + 2e-3) + 1e-9


def test_laplace_closed_form() -> None:
    b = 0.8
    acct = PldAccountant().compose(ev.Laplace(b))
    for eps in [0.0, 0.5, 1.0]:
        exact = -math.expm1((eps - 1 / b) / 2)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up <= exact * (1 + 1e-3) + 1e-12
    assert acct.get_delta(1 / b + 0.05) <= 1e-12


def test_pure_and_approximate_events() -> None:
    # DiscreteLaplace(t) and pure epsilon events use randomized response with eps = 1/t
    a = PldAccountant().compose(ev.DiscreteLaplace(2.0), 5).get_epsilon(1e-6)
    b = PldAccountant().compose(ev.Epsilon(0.5), 5).get_epsilon(1e-6)
    assert a == pytest.approx(b, rel=1e-9)
    assert a <= 2.5 + 0.05  # basic composition, up to one grid step
    ed = PldAccountant().compose(ev.EpsilonDelta(1.0, 1e-4))
    assert ed.get_delta(1.05) == pytest.approx(1e-4, rel=1e-6)
    assert ed.get_epsilon(1e-5) == math.inf


# ----------------------------------------------------------------- structure and contract


def test_composed_and_self_composed_agree() -> None:
    g = ev.PoissonSampled(ev.Gaussian(1.0), 0.02)
    lap = ev.Laplace(3.0)
    a = PldAccountant().compose(ev.Composed([ev.SelfComposed(g, 50), lap]), 2)
    b = PldAccountant().compose(g, 100).compose(lap, 2)
    assert a.get_epsilon(1e-6) == pytest.approx(b.get_epsilon(1e-6), rel=1e-9)
    c = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(1.0), 0.0), 10)
    assert c.get_epsilon(1e-6) == 0.0


def test_unsupported_events_and_bad_input() -> None:
    acct = PldAccountant()
    bad = ev.PoissonSampled(ev.RandomizedResponse(1.0), 0.1)
    assert not acct.supports(bad)
    assert not acct.supports(ev.DiscreteGaussian(2.0))  # see the class docstring
    assert not acct.supports(ev.Zcdp(0.1))
    assert acct.supports(ev.Composed([ev.Gaussian(1.0), ev.Laplace(1.0)]))
    acct.compose(ev.Gaussian(2.0))
    before = acct.get_epsilon(1e-5)
    with pytest.raises(UnsupportedEventError):
        acct.compose(ev.Composed([ev.Gaussian(1.0), bad]))
    assert acct.get_epsilon(1e-5) == before  # all or nothing
    assert issubclass(UnsupportedEventError, ValueError)
    with pytest.raises(TypeError, match="event"):
        acct.compose("gaussian")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="count"):
        acct.compose(ev.Gaussian(1.0), -1)
    with pytest.raises(ValueError, match="delta"):
        acct.get_epsilon(1.5)
    assert acct.get_epsilon(1.0) == 0.0
    assert acct.get_epsilon(0.0) == math.inf  # a Gaussian has no pure-DP guarantee
    assert acct.get_delta(math.inf) <= 1e-12
    with pytest.raises(ValueError, match="epsilon"):
        acct.get_delta(-1.0)
    with pytest.raises(ValueError, match="value_discretization_interval"):
        PldAccountant(value_discretization_interval=0.0)
    with pytest.raises(ValueError, match="value_discretization_interval"):
        PldAccountant(1e-7).compose(ev.Gaussian(0.3), 1000).get_epsilon(1e-5)


def test_accountant_contract_and_relations() -> None:
    from dpfast.accounting import Accountant, NeighbouringRelationError

    acct = PldAccountant()
    assert isinstance(acct, Accountant)
    acct.compose(ev.PoissonSampled(ev.Gaussian(1.0), 0.1), 3)  # add/remove one
    assert acct.neighbouring == "add_remove"
    with pytest.raises(NeighbouringRelationError):
        acct.compose(ev.RandomizedResponse(1.0))  # replace one: not implied
    rr = PldAccountant().compose(ev.RandomizedResponse(1.0))
    assert rr.neighbouring == "replace_one"


@settings(max_examples=15, deadline=None)
@given(q=st.floats(1e-3, 0.5), sigma=st.floats(0.5, 5.0), steps=st.integers(1, 300),
       delta=st.sampled_from([1e-8, 1e-5, 1e-3]))
def test_bounds_bracket_and_pld_below_rdp(q: float, sigma: float, steps: int,
                                          delta: float) -> None:
    acct = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(sigma), q), steps)
    lower, upper = acct.get_epsilon_bounds(delta)
    assert lower <= upper
    assert upper <= dpsgd_epsilon(q, sigma, steps, delta) * (1 + 1e-3) + 1e-6


@settings(max_examples=25, deadline=None)
@given(q=st.one_of(st.just(1.0), st.floats(1e-4, 0.999)), scale=st.floats(0.05, 20.0),
       kind=st.sampled_from(["gauss", "laplace"]), frac=st.floats(0.01, 0.3))
def test_single_event_distributions_are_valid_and_pessimistic(
        q: float, scale: float, kind: str, frac: float) -> None:
    from dpfast.accounting.pld import _curves as cv
    from dpfast.accounting.pld import _pmf as pm

    if kind == "gauss":
        curves = [cv.GaussianRemove(q, scale)] + ([cv.GaussianAdd(q, scale)] if q < 1 else [])
    else:
        curves = [cv.LaplaceRemove(q, scale)] + ([cv.LaplaceAdd(q, scale)] if q < 1 else [])
    for curve in curves:
        dx = max(frac * (curve.hi - curve.lo) / 50.0, 1e-6)
        pmf = pm.connect_dots(curve, dx, 2**20)
        assert abs(math.fsum(pmf.p) + pmf.inf - 1.0) < 1e-11  # nothing lost
        for e in [0.0, 0.1, 0.7, 2.0]:
            exact = float(curve.delta(np.array([e]))[0])
            assert pm.delta(pmf, dx, e) >= exact - 1e-15


# ----------------------------------------------------------------- memory


@pytest.mark.parametrize(("event", "count", "delta"), [
    (ev.Gaussian(480.0), 1, 1e-5),  # epsilon ~ 0.01
    (ev.Gaussian(0.15), 1, 1e-6),  # epsilon ~ 53
])
def test_memory_bounded(event: ev.DpEvent, count: int, delta: float) -> None:
    tracemalloc.start()
    try:
        eps = PldAccountant().compose(event, count).get_epsilon(delta)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.0 < eps < 200.0
    assert peak < 100 * 2**20, peak


# ----------------------------------------------------------------- DP-SGD


def test_dpsgd_accountant_parameter() -> None:
    rdp = dpsgd_epsilon(256 / 60000, 1.1, 14062, 1e-5)
    pld = dpsgd_epsilon(256 / 60000, 1.1, 14062, 1e-5, accountant="pld")
    assert pld < rdp
    assert pld == pytest.approx(2.382, abs=0.01)  # dp_accounting PLD: 2.3817
    with pytest.raises(ValueError, match="accountant"):
        dpsgd_epsilon(0.01, 1.0, 10, 1e-5, accountant="prv")
    with pytest.raises(TypeError, match="accountant"):
        dpsgd_epsilon(0.01, 1.0, 10, 1e-5, accountant=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("target", "q", "steps"), [(2.0, 0.01, 2000), (0.5, 0.004, 500)])
def test_pld_calibration_is_conservative(target: float, q: float, steps: int) -> None:
    from dpfast.accounting.pld.dpsgd import pld_calibrate_noise_multiplier

    sigma = calibrate_noise_multiplier(target, 1e-5, q, steps, accountant="pld")
    assert dpsgd_epsilon(q, sigma, steps, 1e-5, accountant="pld") <= target
    assert dpsgd_epsilon(q, sigma / 1.002, steps, 1e-5, accountant="pld") > target * 0.999
    s_rdp = calibrate_noise_multiplier(target, 1e-5, q, steps)
    assert sigma < s_rdp
    _, evaluations = pld_calibrate_noise_multiplier(target, 1e-5, q, steps, s_rdp, 5e-4)
    assert evaluations <= 8  # far fewer than bisection's ~20


# ----------------------------------------------------------------- command line


def _cli(*args: str, fresh: bool = False) -> subprocess.CompletedProcess:
    """``dpfast epsilon ARGS``: the CLI's ``main`` in this process (tests/forkrun.cli_here,
    a computation checked for what it prints); ``fresh``: ``python -m dpfast``."""
    if not fresh:
        return cli_here("epsilon", *args)
    return subprocess.run([sys.executable, "-m", "dpfast", "epsilon", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=SUBPROCESS_TIMEOUT_S)


def test_cli_prints_both_accountants() -> None:
    r = _cli("--sampling-rate", "0.01", "--noise-multiplier", "1.1", "--steps", "100",
             "--delta", "1e-5", "--accountant", "rdp")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("rdp: epsilon = ") and lines[1].startswith("pld: epsilon = ")
    rdp, pld = (float(line.split("=")[1].split()[0]) for line in lines[:2])
    assert pld < rdp
    bad = _cli("--sampling-rate", "2", "--noise-multiplier", "1", "--steps", "1",
               "--delta", "1e-5")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "sampling_rate" in bad.stderr


def test_cli_plot_writes_png(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "curve.png"
    r = _cli("--sampling-rate", "0.02", "--noise-multiplier", "1.0", "--steps", "200",
             "--delta", "1e-5", "--plot", str(out), fresh=True)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.isfinite(float(r.stdout.split("=")[1].split()[0]))


# ----------------------------------------------------------------- lower bound, round-off


@settings(max_examples=25, deadline=None)
@given(q=st.one_of(st.just(1.0), st.floats(1e-4, 0.999)), scale=st.floats(0.05, 20.0),
       kind=st.sampled_from(["gauss", "laplace", "rr"]), frac=st.floats(0.01, 0.3),
       one_sided=st.booleans())
def test_optimistic_distributions_are_valid_and_below(
        q: float, scale: float, kind: str, frac: float, one_sided: bool) -> None:
    from dpfast.accounting.pld import _curves as cv
    from dpfast.accounting.pld._finite import randomized_response
    from dpfast.accounting.pld._lower import connect_dots_lower

    if kind == "gauss":
        curves = [cv.GaussianRemove(q, scale)] + ([cv.GaussianAdd(q, scale)] if q < 1 else [])
    elif kind == "laplace":
        curves = [cv.LaplaceRemove(q, scale)] + ([cv.LaplaceAdd(q, scale)] if q < 1 else [])
    else:
        curves = [randomized_response(scale / 4, 2 + int(q * 3), q / 10)]
    for curve in curves:
        dx = max(frac * (curve.hi - curve.lo) / 50.0, 1e-6)
        pmf = connect_dots_lower(curve, dx, 2**20, one_sided)
        assert np.all(pmf.p >= 0.0) and pmf.inf >= 0.0
        assert math.fsum(pmf.p) + pmf.inf <= 1.0 + 1e-15
        losses = (np.arange(pmf.p.size) + pmf.lo) * dx
        # the whole curve, negative epsilon included: delta(x) = E_P (1 - x e^-L)_+
        for e in np.concatenate([np.linspace(curve.lo - 0.1, curve.hi + 0.1, 41), [0.0]]):
            ours = math.fsum(pmf.p * np.maximum(-np.expm1(np.minimum(e - losses, 700.0)), 0.0)
                             ) + pmf.inf
            exact = float(curve.delta(np.array([e]))[0])
            assert ours <= exact + 1e-15, (e, ours, exact)


def test_lower_bound_is_tight_after_many_steps() -> None:
    # before connect-the-dots from below: 0.70 vs 2.38 (losses rounded down)
    acct = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(1.1), 256 / 60000), 14062)
    lower, upper = acct.get_epsilon_bounds(1e-5)
    assert lower <= 2.3817 <= upper  # dp_accounting's pessimistic value: above the truth?
    assert upper - lower < 5e-3 * upper


def test_fft_roundoff_bound_covers_the_error() -> None:
    from dpfast.accounting.pld import _pmf as pm

    rng = np.random.default_rng(5)
    p = rng.random(300) ** 8
    a = pm.Pmf(-150, p / math.fsum(p), 0.0, 0.0, True)
    for count in (7, 400):
        got = pm.self_compose(a, count, 1e-30, 2**20)
        ref = pm.self_compose(a, count, 1e-30, 2**20, precise=True)
        n = max(got.p.size + got.lo, ref.p.size + ref.lo) - min(got.lo, ref.lo)
        x, y = np.zeros(n), np.zeros(n)
        x[got.lo - min(got.lo, ref.lo):][:got.p.size] = got.p
        y[ref.lo - min(got.lo, ref.lo):][:ref.p.size] = ref.p
        err = float(np.abs(x - y).sum())
        assert err <= got.err  # the bound covers the double-precision error
        assert ref.err < got.err  # and long double does better
    b = pm.Pmf(-3, np.array([0.25, 0.5, 0.25]), 0.0, 0.0, True)
    c = pm.compose(a, b, 1e-30, 2**20)
    exact = np.convolve(a.p, b.p)
    assert float(np.abs(c.p - exact[:c.p.size]).sum()) <= c.err


def test_fft_roundoff_bound_for_atoms_far_apart_on_a_fine_grid() -> None:
    """Sparse atoms (a discrete pair on a fine grid): the spectrum does not decay, where
    the normwise inverse-FFT bound is the smaller; it still covers the actual error and
    stays 13-40x smaller than the componentwise one alone."""
    from dpfast.accounting.pld import _pmf as pm

    rng = np.random.default_rng(11)
    p = np.zeros(40 * 1667 + 1)
    p[::1667] = rng.random(41) ** 4
    a = pm.Pmf(-20 * 1667, p / math.fsum(p), 0.0, 0.0, True)
    for count in (2, 6):
        got = pm.self_compose(a, count, 1e-30, 2**20)
        exact = a.p.copy()
        for _ in range(count - 1):  # direct convolution of the few atoms: exact enough
            nz = np.flatnonzero(exact)
            nxt = np.zeros(exact.size + a.p.size - 1)
            for k in nz:
                nxt[k:k + a.p.size] += exact[k] * a.p
            exact = nxt
        shift = got.lo - count * a.lo
        ref = exact[shift:shift + got.p.size]
        err = float(np.abs(got.p - ref).sum()) + float(exact.sum() - ref.sum())
        assert err <= got.err
        assert got.err < 2e-11  # measured 5.7e-12 / 1.1e-11 (componentwise: 2.2e-10 / 1.5e-10)


def test_delta_tail_sums_bound_their_rounding() -> None:
    """delta() of a pmf with many points: the pessimistic value is above the exact
    hockey-stick sum (fsum) and within 0.2% of it (long-double tail sums for small
    answers), and epsilon() inverts it."""
    from dpfast.accounting.pld import _pmf as pm

    rng = np.random.default_rng(12)
    p = rng.random(200_001) ** 3
    dx = 1e-4
    a = pm.Pmf(-100_000, p / math.fsum(p), 0.0, 0.0, True)
    losses = (np.arange(p.size) + a.lo) * dx
    for eps in (0.0, 0.5, 3.0, 9.9, 9.99999):
        sel = losses > eps
        exact = math.fsum((a.p[sel] * -np.expm1(eps - losses[sel])).tolist())
        d = pm.delta(a, dx, eps)
        # the sums' rounding: at most 1e-3 of the answer (long double where double's
        # bound, 4e-11 here, would be more)
        assert exact <= d <= exact * (1 + 2e-3) + 5e-14
        assert pm.epsilon(a, dx, d) <= eps + 1e-9  # delta(eps) <= d


def test_convex_minorant_kernel() -> None:
    from dpfast._kernels.convex import convex_minorant_slopes

    rng = np.random.default_rng(3)
    s = rng.normal(size=60)
    w = rng.random(60) + 0.1
    out = convex_minorant_slopes(s, w)
    assert np.all(np.diff(out) >= -1e-12)  # convex
    f = np.concatenate([[0.0], np.cumsum(s * w)])
    g = np.concatenate([[0.0], np.cumsum(out * w)])
    assert np.all(g <= f + 1e-12)  # below
    xs = np.concatenate([[0.0], np.cumsum(w)])
    for i in range(1, xs.size):  # the greatest one: touches the lower hull's vertices
        lower = min((f[j] * (xs[k] - xs[i]) + f[k] * (xs[i] - xs[j])) / (xs[k] - xs[j])
                    for j in range(0, i + 1) for k in range(i, xs.size) if k > j) \
            if 0 < i < xs.size - 1 else f[i]
        assert g[i] >= lower - 1e-9


@settings(max_examples=10, deadline=None)
@given(q=st.floats(1e-4, 0.5), scale=st.floats(0.3, 20.0),
       kind=st.sampled_from(["gauss", "laplace"]), frac=st.floats(0.01, 0.3))
def test_add_direction_derived_from_remove_is_pessimistic_and_tight(
        q: float, scale: float, kind: str, frac: float) -> None:
    # the add pair is the remove pair swapped: its connect-the-dots pmf is derived
    # from the remove one (accountant fast path); it must stay above the exact add
    # curve and agree with the direct discretisation
    from dpfast.accounting.pld import _curves as cv
    from dpfast.accounting.pld import _pmf as pm
    from dpfast.accounting.pld._swap import MAX_HI, swap_pmf

    rem, add = ((cv.GaussianRemove(q, scale), cv.GaussianAdd(q, scale)) if kind == "gauss"
                else (cv.LaplaceRemove(q, scale), cv.LaplaceAdd(q, scale)))
    dx = max(frac * (add.hi - add.lo) / 50.0, 1e-6)
    r = pm.connect_dots(rem, dx, 2**20)
    if -r.lo * dx > MAX_HI:
        return
    s, d = swap_pmf(r, dx), pm.connect_dots(add, dx, 2**20)
    assert abs(math.fsum(s.p) + s.inf - 1.0) < 1e-11
    assert s.err < 1e-13
    for e in [0.0, 0.01, 0.1, 0.7]:
        exact = float(add.delta(np.array([e]))[0])
        got = pm.delta(s, dx, e)
        assert got >= exact - 1e-15
        assert got == pytest.approx(pm.delta(d, dx, e), rel=1e-9, abs=1e-13)


def test_derived_add_direction_matches_direct_composition() -> None:
    from dpfast.accounting.pld import _curves as cv
    from dpfast.accounting.pld import _pmf as pm
    from dpfast.accounting.pld._swap import swap_pmf

    q, s, t, dx = 0.01, 4.0, 10_000, 1.25e-4
    r = pm.connect_dots(cv.GaussianRemove(q, s), dx, 2**20)
    direct = pm.self_compose(pm.connect_dots(cv.GaussianAdd(q, s), dx, 2**20), t, 1e-16, 2**20)
    derived = pm.self_compose(swap_pmf(r, dx), t, 1e-16, 2**20)
    e_direct, e_derived = pm.epsilon(direct, dx, 1e-5), pm.epsilon(derived, dx, 1e-5)
    assert e_direct <= e_derived <= e_direct * (1 + 1e-6)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 4.0), (0.004, 0.8), (1.0, 1.0), (0.5, 0.6)])
def test_gaussian_quadrature_error_bound_is_certified(q: float, sigma: float) -> None:
    # |G4 - exact| <= the certified bound (+ float evaluation), exact by mpmath at 40
    # digits, on pieces of several widths across the loss range (unit pieces, tails)
    mpmath = pytest.importorskip("mpmath")
    from dpfast.accounting.pld import _curves as cv
    from dpfast.accounting.pld import _pmf as pm

    mpmath.mp.dps = 40
    c = cv.GaussianRemove(q, sigma)
    s = mpmath.mpf(sigma)
    rng = np.random.default_rng(5)
    for gt in (False, True):
        los = rng.uniform(-3.0 / sigma - 1.0, 3.0 / sigma, 6)
        if not gt:
            los = np.minimum(los, -1.0)
        for lo, w in zip(los, [1.0, 0.5, 0.2, 0.05, 0.01, 1.0], strict=True):
            a, h, base = np.array([lo]), np.array([w]), np.array([lo + 0.3])
            got = float(pm._gl_n(c, a, h, base, pm._GL_T, pm._GL_W, gt)[0])
            bound = float(c.gl4_error_bound(a, h, base, gt)[0])

            def f(t, gt=gt, base=base[0]):
                z = (s * s * t + mpmath.mpf(0.5)) / s
                v = mpmath.ncdf(z) if (t < 0 and not gt) else -mpmath.ncdf(-z)
                return v * q * mpmath.exp(t - base)

            exact = mpmath.quad(f, [mpmath.mpf(lo), mpmath.mpf(lo) + mpmath.mpf(w)])
            # float evaluation: covered by connect_dots' 64-ulp rounding of each slope
            assert abs(got - float(exact)) <= bound + 1e-30 + pm._KAPPA * pm._U * abs(got)


def test_composed_add_direction_by_swap_is_upper_bound_and_tight() -> None:
    # the accountant derives the composed add direction from the composed remove one
    # (one FFT power instead of two) where the swap's err is affordable; the result
    # must bound the directly composed add direction from above, closely
    from dpfast.accounting.pld import _curves as cv
    from dpfast.accounting.pld import _pmf as pm
    from dpfast.accounting.pld._swap import swap_pmf

    q, s, t, dx = 0.01, 4.0, 10_000, 1.25e-4
    rem = pm.self_compose(pm.connect_dots(cv.GaussianRemove(q, s), dx, 2**20), t, 1e-16,
                          2**20)
    direct = pm.self_compose(pm.connect_dots(cv.GaussianAdd(q, s), dx, 2**20), t, 1e-16,
                             2**20)
    derived = swap_pmf(rem, dx, exact_sums=False)
    assert abs(math.fsum(derived.p) + derived.inf - 1.0) < 1e-10
    for e in [0.0, 0.3, 0.9, 1.5]:
        d_direct, d_derived = pm.delta(direct, dx, e), pm.delta(derived, dx, e)
        assert d_derived >= d_direct - 2.0 * direct.err
        assert d_derived <= d_direct + 2.0 * derived.err + 1e-13
    e_direct, e_derived = pm.epsilon(direct, dx, 1e-5), pm.epsilon(derived, dx, 1e-5)
    assert e_direct <= e_derived <= e_direct * (1 + 1e-4)


@pytest.mark.parametrize(("q", "sigma", "steps", "delta", "modes"), [
    (0.01, 4.0, 10_000, 1e-5, ["swap"]),  # the swap's err is affordable
    (0.004, 0.8, 100_000, 1e-5, ["swap", "direct"]),  # e^hi too large: not even tried
    (0.5, 0.5, 123, 1e-3, ["swap", "direct"]),  # the swap loses the Q-heavy lower tail
    (0.01, 4.0, 10_000, 1e-8, ["swap", "direct", "precise"]),  # long double needed
])
def test_accountant_chooses_the_cheapest_affordable_build(
        q: float, sigma: float, steps: int, delta: float, modes: list[str]) -> None:
    acct = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(sigma), q), steps)
    eps = acct.get_epsilon(delta)
    assert [k[1] for k in acct._cache if k[0]] == modes
    built = [b for b in acct._cache.values() if b is not None]
    assert max(p.err for p in built[-1][1]) <= 1e-3 * delta or modes[-1] == "precise"
    # the answer agrees with composing both directions directly (same rule for the
    # round-off allowance, without the swap)
    from dpfast.accounting.pld import _pmf as pm
    from dpfast.accounting.pld.accountant import _tau_for

    ref = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(sigma), q), steps)
    for mode in ("direct", "precise"):
        dx, pmfs = ref._build(True, mode, _tau_for(delta))
        if mode == "precise" or max(p.err for p in pmfs) <= 1e-3 * delta:
            break
    direct = max(pm.epsilon(p, dx, delta) for p in pmfs)
    assert direct <= eps <= direct * (1 + 1e-4)


def test_truncation_follows_the_queried_delta_and_builds_are_reused() -> None:
    from dpfast.accounting.pld.accountant import _tau_for

    assert _tau_for(1e-5) == pytest.approx(1e-10)
    assert _tau_for(None) == _tau_for(0.0) == 1e-16
    assert _tau_for(1e-14) == 1e-16  # never below the floor
    acct = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(1.1), 0.01), 3000)
    e5 = acct.get_epsilon(1e-5)
    n = len(acct._cache)
    e8 = acct.get_epsilon(1e-8)
    assert e8 > e5 and len(acct._cache) > n
    n = len(acct._cache)
    assert acct.get_epsilon(1e-5) == pytest.approx(e5, rel=1e-4)  # the finer build reused
    assert len(acct._cache) == n
    # the truncated mass is inside the reported delta: a build with the floor truncation
    # (get_delta) confirms epsilon at delta to within the allowances
    assert acct.get_delta(e5) <= 1e-5 * (1 + 1e-3)


@pytest.mark.parametrize(("q", "b"), [(1.0, 1.0), (1.0, 0.2), (0.3, 0.7), (0.01, 3.0),
                                      (0.9, 0.08)])
def test_laplace_closed_form_cell_integrals_are_certified(q: float, b: float) -> None:
    # the Laplace remove pair's chord-slope integrals in closed form: within their
    # certified bound of the exact value (mpmath, 40 digits), on cells across the loss
    # range, straddling the atoms at lo and hi, in both slope forms
    mpmath = pytest.importorskip("mpmath")
    from dpfast.accounting.pld import _curves as cv

    mpmath.mp.dps = 40
    c = cv.LaplaceRemove(q, b)
    mq, mb = mpmath.mpf(q), mpmath.mpf(b)
    lo_x = mpmath.log(1 - mq + mq * mpmath.exp(-1 / mb))
    hi_x = mpmath.log(1 - mq + mq * mpmath.exp(1 / mb))

    def q_gt(e):  # Q(L > e), exact
        if e < lo_x:
            return mpmath.mpf(1)
        if e >= hi_x:
            return mpmath.mpf(0)
        return mpmath.exp(-1 / (2 * mb)) * mpmath.sqrt(mq) / 2 / mpmath.sqrt(
            mpmath.exp(e) - 1 + mq)

    rng = np.random.default_rng(11)
    span = c.hi - c.lo
    a = np.concatenate([rng.uniform(c.lo - 0.1 * span, c.hi + 0.05 * span, 40),
                        [c.lo - 1e-3 * span, c.hi - 1e-3 * span, c.lo, c.lo - 0.5 * span]])
    h = np.concatenate([rng.uniform(1e-4, 0.05, 40) * span, [2e-3 * span] * 3, [span]])
    for gt in (True, False):
        val, err = c.cell_integrals(a, h, gt)
        for ai, hi_, v, e in zip(a, h, val, err, strict=True):
            ma, mh = mpmath.mpf(float(ai)), mpmath.mpf(float(hi_))
            pts = sorted({ma, ma + mh, *[p for p in (lo_x, hi_x) if ma < p < ma + mh]})
            def f(t, ma=ma, gt=gt):
                return (-q_gt(t) if gt else 1 - q_gt(t)) * mpmath.exp(t - ma)

            exact = mpmath.quad(f, pts)
            assert abs(mpmath.mpf(float(v)) - exact) <= mpmath.mpf(float(e)), (ai, hi_, gt)
            assert float(e) <= 1e-7 * abs(float(exact)) + 1e-13  # and the bound is small


def test_tiny_noise_refused_clearly_and_small_laplace_finite() -> None:
    # losses beyond 700 overflow e^L: refused with a clear error (was nan); a Laplace
    # with a large but representable loss stays finite and pessimistic (was inf)
    from dpfast.accounting import UnsupportedEventError

    for e in (ev.Gaussian(0.03), ev.Laplace(0.0014), ev.PoissonSampled(ev.Gaussian(0.03), 0.1)):
        with pytest.raises(UnsupportedEventError, match="privacy losses up to"):
            PldAccountant().compose(e)
    lo, up = PldAccountant().compose(ev.Laplace(0.05), 3).get_epsilon_bounds(1e-6)
    # the three top atoms (mass 1/8 at 60) alone give delta(e) >= (1 - e^(e - 60)) / 8,
    # so the exact epsilon is at least 60 + log(1 - 8e-6); basic composition caps it at 60
    assert 60.0 + math.log1p(-8e-6) <= up <= 60.0 and lo <= up
    assert PldAccountant().compose(ev.Laplace(0.002)).get_epsilon(1e-6) == pytest.approx(
        500.0, rel=1e-4)
