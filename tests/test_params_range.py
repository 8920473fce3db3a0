"""Issue 36, channel 6 (extreme parameters): a privacy parameter whose noise cannot be
represented is refused with a ValueError naming it, before the charge, and nothing hangs.

The documented range (docs/security.md, "Parameters and data"): a release takes
``epsilon <= 2**30``; every noised part's discrete scale / sigma lies in
``[2**-100, 2**50]`` (float grid mechanisms: their grid must converge, about
``epsilon >= 1e-15``); outside it the mechanism refuses when it is built, which every
release does before it charges.  On the old code ``epsilon = 1e-40`` was charged and then
hung in a noise kernel, ``epsilon = 1e-20`` returned int64 values far outside the noise's
representable range, and ``epsilon = 1e308`` raised ZeroDivisionError / OverflowError or
RuntimeWarnings from the accountant.

The calls that hung on the old code run in a subprocess with a generous timeout, so this
file cannot hang whatever the code does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import dpfast
from dpfast import mechanisms
from dpfast import tables as dpt
from dpfast.accounting import events as ev

_CHILD = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("error")
    import numpy as np
    import dpfast
    from dpfast import tables as dpt
    out = {}
    path = sys.argv[1]
    for eps in (1e-40, 1e-300, 5e-324):
        b = dpfast.Budget(1.0, ledger=path)
        calls = {
            "count": lambda: dpt.count(np.array([1, 2, 2]), epsilon=eps, domain=[1, 2],
                                       budget=b),
            "sum_int": lambda: dpt.sum(np.array([1, 2, 2]), np.array([1, 2, 2]),
                                       bounds=(0, 3), epsilon=eps, domain=[1, 2], budget=b),
            "sum_float": lambda: dpt.sum(np.array([1.0, 2, 2]), np.array([1, 2, 2]),
                                         bounds=(0, 3), epsilon=eps, domain=[1, 2],
                                         budget=b),
            "select": lambda: dpt.count(np.array([1, 2, 2]), epsilon=eps, delta=1e-6,
                                        budget=b),
            "histogram": lambda: dpfast.histogram(np.array([0.5]), 2, range=(0, 1),
                                                  epsilon=eps, budget=b),
            "topdown": lambda: dpt.topdown(np.array([1, 2]), [np.zeros(2, int), np.arange(2)],
                                           rho=eps, budget=b),
        }
        for name, f in calls.items():
            try:
                f()
                res = "ok"
            except ValueError as exc:
                res = "ValueError: " + str(exc)
            except BaseException as exc:
                res = type(exc).__name__
            out[f"{name}@{eps!r}"] = [res, len(b.history())]
    # the root of the hang: the addressed sampler itself refuses a scale outside its range
    # (a release never gets there: its plan refuses first)
    from fractions import Fraction
    from dpfast.noise import _addressed
    cell = np.empty(1, np.int64)
    idx = np.zeros(1, np.int64)
    for t in (Fraction(10) ** 40, Fraction(1, 10 ** 40)):
        try:
            _addressed.run_chunks(_addressed.key_words(bytes(32)), np.zeros((1, 3), np.uint32),
                                  idx, idx + 1, 0, t, cell)
            res = "ok"
        except ValueError as exc:
            res = "ValueError: epsilon (sampler) " + str(exc)
        out[f"sampler@{float(t)!r}"] = [res, 0]
    print(json.dumps(out))
""")


def test_tiny_epsilon_is_refused_before_the_charge_and_never_hangs(tmp_path) -> None:
    """channel 6: 1e-40 hung after the charge (a noise kernel with scale 1e40); the
    sampler now refuses such a scale itself, and every release refuses it first."""
    ledger = tmp_path / "ledger.sqlite"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(ledger)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out
    for name, (res, charges) in out.items():
        assert res.startswith("ValueError"), (name, res)
        assert "epsilon" in res or "rho" in res, (name, res)
        assert charges == 0, name  # nothing charged on the ledger


@pytest.mark.parametrize("eps", [1e-20, 1e-16, 1e-30])
def test_small_epsilon_whose_noise_leaves_int64_is_refused(tmp_path, eps) -> None:
    """channel 6: 1e-20 .. 1e-30 returned int64 'noisy' values although the noise cannot
    be represented; now a ValueError naming epsilon, and the budget untouched."""
    b = dpfast.Budget(1.0, ledger=tmp_path / "l.sqlite")
    with pytest.raises(ValueError, match="epsilon"):
        dpt.count(np.array([1, 2, 2]), epsilon=eps, domain=[1, 2], budget=b)
    with pytest.raises(ValueError, match="epsilon"):
        dpt.sum(np.array([1, 2, 2]), np.array([1, 2, 2]), bounds=(0, 3), epsilon=eps,
                domain=[1, 2], budget=b)
    with pytest.raises(ValueError, match="epsilon"):
        dpfast.histogram(np.array([0.5]), 2, range=(0, 1), epsilon=eps, budget=b)
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.DiscreteLaplaceMechanism(epsilon=eps)
    with pytest.raises(ValueError, match="rho"):
        mechanisms.DiscreteGaussianMechanism(rho=eps * eps)
    assert b.history() == []


def test_huge_epsilon_is_refused_cleanly(tmp_path) -> None:
    """channel 6: 1e308 failed with ZeroDivisionError / OverflowError / RuntimeWarning;
    now a ValueError naming the parameter before the charge (warnings are errors here)."""
    b = dpfast.Budget(1e300, delta=0.5, ledger=tmp_path / "l.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calls = [
            lambda: dpt.count(np.array([1, 2, 2]), epsilon=1e308, domain=[1, 2], budget=b),
            lambda: dpt.count(np.array([1, 2, 2]), epsilon=1e308, delta=1e-6, budget=b),
            lambda: dpt.count(np.array([1, 2, 2]), epsilon=1e10, delta=1e-6, budget=b),
            lambda: dpt.count(np.array([1, 2]), rho=1e308, domain=[1, 2], budget=b),
            lambda: dpt.mean(np.array([1.0, 2.0]), np.array([1, 2]), bounds=(0, 3),
                             epsilon=1e308, domain=[1, 2], budget=b),
            lambda: dpfast.histogram(np.array([0.5]), 2, range=(0, 1), epsilon=1e308,
                                     budget=b),
            lambda: dpt.topdown(np.array([1, 2]), [np.zeros(2, int), np.arange(2)],
                                rho=1e308, budget=b),
            lambda: dpt.aggregate({"g": [1]} and __import__("pandas").DataFrame(
                {"g": [1, 2]}), "g", metrics=["count"], epsilon=1e308, domain=[1, 2],
                budget=b),
        ]
        for call in calls:
            with pytest.raises(ValueError, match="epsilon|rho"):
                call()
        for make in (lambda: mechanisms.DiscreteLaplaceMechanism(epsilon=1e308),
                     lambda: mechanisms.DiscreteGaussianMechanism(rho=1e308),
                     lambda: mechanisms.GaussianMechanism(rho=1e308),
                     lambda: mechanisms.DiscreteGaussianMechanism(epsilon=1e308, delta=0.5)):
            with pytest.raises(ValueError, match="epsilon|rho"):
                make()
    assert b.history() == []


def test_the_largest_epsilon_of_the_range_still_releases() -> None:
    rel = dpt.count(np.array([1, 2, 2]), epsilon=2.0 ** 30, delta=1e-6,
                    rng=dpfast.default_rng(bytes(32)))
    assert rel.to_dict() == {1: 1, 2: 2} or len(rel) <= 2
    m = mechanisms.DiscreteLaplaceMechanism(epsilon=2.0 ** 100)  # scale 2**-100
    assert m.scale == 2.0 ** -100
    assert mechanisms.DiscreteLaplaceMechanism(epsilon=2.0 ** -50).scale == 2.0 ** 50


def test_accountant_takes_huge_pure_epsilon_without_warnings() -> None:
    """channel 6: the RDP accountant overflowed (RuntimeWarning) on a pure-DP event of
    ε = 1e308; pure ε-DP is (α, ε)-RDP at every order, which it now states."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = dpfast.Budget(epsilon=1e308, delta=1e-3)
        b.spend(ev.EpsilonDelta(1e308, 0.0))
        b2 = dpfast.Budget(epsilon=1e308, delta=1e-3)
        with pytest.raises(dpfast.BudgetExceededError):
            b2.spend(ev.Laplace(noise_multiplier=1e-308))  # its ε is above 1e308


@pytest.mark.parametrize("event", [ev.Laplace(noise_multiplier=1e-308),
                                   ev.Laplace(noise_multiplier=5e-324),
                                   ev.Gaussian(noise_multiplier=1e-308),
                                   ev.DiscreteGaussian(noise_multiplier=1e-308),
                                   ev.Zcdp(1e308), ev.EpsilonDelta(1e308, 0.0)])
def test_budget_charges_of_extreme_events_are_clean_refusals(tmp_path, event) -> None:
    """channel 6 (Budget charges): an event whose privacy loss overflows float64 is a
    clean refusal (ValueError or BudgetExceededError, nothing recorded), never a
    RuntimeWarning from the accountant's arithmetic (warnings are errors here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = dpfast.Budget(1.0, delta=1e-6, ledger=tmp_path / "l.sqlite")
        with pytest.raises((ValueError, dpfast.BudgetExceededError)):
            b.spend(event)
    assert b.history() == []
