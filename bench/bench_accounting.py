"""DP-SGD accounting speed: dpfast vs dp_accounting on the same inputs, same run.

* ``dpsgd_epsilon(q, sigma, 10^4 steps, delta)`` vs dp_accounting's
  ``RdpAccountant().compose(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), 10^4)``
  followed by ``get_epsilon(delta)``.
* ``calibrate_noise_multiplier(target, delta, q, 10^4)`` vs dp_accounting's
  ``calibrate_dp_mechanism(RdpAccountant, ..., LowerEndpointAndGuess(0, 1))``.

Both use the same default RDP orders.  The ratio ``dp_accounting time / dpfast time``
(target >= 10x) is printed and stored in ``benchmark.extra_info``.  Each configuration
times a fresh process-level cache state for dpfast only after a warm-up call, as a user
computing many epsilons would see it; dp_accounting has no per-call state to warm.

Run: .venv/bin/python -m pytest bench/bench_accounting.py --benchmark-only -p no:randomly -s
"""

from __future__ import annotations

import time

import _timing as _t
import pytest

from dpfast.accounting import calibrate_noise_multiplier, dpsgd_epsilon

dpa = pytest.importorskip("dp_accounting")
mc = pytest.importorskip("dp_accounting.mechanism_calibration")

STEPS = 10_000
DELTA = 1e-5
EPS_CASES = [(0.01, 1.1), (0.001, 0.8), (0.004, 1.0), (0.05, 2.0)]
CAL_CASES = [(0.01, 2.0), (0.004, 1.0), (0.05, 8.0)]


def _dpa_epsilon(q: float, sigma: float) -> float:
    acct = dpa.rdp.RdpAccountant()
    acct.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), STEPS)
    return acct.get_epsilon(DELTA)


def _dpa_calibrate(q: float, target: float) -> float:
    def make_event(s: float):
        return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(s)), STEPS)

    return mc.calibrate_dp_mechanism(
        dpa.rdp.RdpAccountant, make_event, target, DELTA, mc.LowerEndpointAndGuess(0.0, 1.0)
    )


@pytest.mark.parametrize(("q", "sigma"), EPS_CASES)
def test_dpsgd_epsilon_speed(benchmark, report, q, sigma) -> None:
    ours = dpsgd_epsilon(q, sigma, STEPS, DELTA)  # warm-up (per-order caches)
    theirs = _dpa_epsilon(q, sigma)
    assert ours <= theirs * (1 + 1e-9)
    benchmark.pedantic(lambda: dpsgd_epsilon(q, sigma, STEPS, DELTA), rounds=30, iterations=1)
    t_ours = benchmark.stats.stats.median
    t_base = _t.median_time(lambda: _dpa_epsilon(q, sigma), 7)
    ratio = t_base / t_ours
    benchmark.extra_info.update({
        "dpfast_ms": t_ours * 1e3, "dp_accounting_ms": t_base * 1e3, "speedup": ratio,
        "epsilon_dpfast": ours, "epsilon_dp_accounting": theirs,
    })
    msg = (f"q={q} sigma={sigma} steps={STEPS}: dpfast {t_ours * 1e3:.2f} ms, "
           f"dp_accounting {t_base * 1e3:.1f} ms -> {ratio:.1f}x (target >= 10x); "
           f"eps {ours:.6f} vs {theirs:.6f}")
    print(msg)
    report(f"dpsgd_epsilon[q={q},sigma={sigma}]", f"{ratio:.1f}x faster than dp_accounting")


@pytest.mark.parametrize(("q", "target"), CAL_CASES)
def test_calibration_speed(benchmark, report, q, target) -> None:
    ours = calibrate_noise_multiplier(target, DELTA, q, STEPS)
    benchmark.pedantic(lambda: calibrate_noise_multiplier(target, DELTA, q, STEPS),
                       rounds=5, iterations=1)
    t_ours = benchmark.stats.stats.median
    t0 = time.perf_counter()
    theirs = _dpa_calibrate(q, target)
    t_base = time.perf_counter() - t0
    ratio = t_base / t_ours
    benchmark.extra_info.update({
        "dpfast_ms": t_ours * 1e3, "dp_accounting_ms": t_base * 1e3, "speedup": ratio,
        "sigma_dpfast": ours, "sigma_dp_accounting": theirs,
    })
    msg = (f"q={q} target eps={target} steps={STEPS}: dpfast {t_ours * 1e3:.1f} ms, "
           f"dp_accounting {t_base * 1e3:.0f} ms -> {ratio:.1f}x (target >= 10x); "
           f"sigma {ours:.6f} vs {theirs:.6f}")
    print(msg)
    report(f"calibrate_noise_multiplier[q={q},eps={target}]",
           f"{ratio:.1f}x faster than dp_accounting")
