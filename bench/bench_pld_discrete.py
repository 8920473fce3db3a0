"""PLD of the discrete mechanisms: the vectorised atomic discretisation, same run.

* Connect-the-dots of a discrete Gaussian pair (``sigma = 30`` and ``200``: 611 and 4011
  atoms): ``pld/_atomic.py``'s split (one vectorised pass) vs the per-atom quadrature
  path of ``_pmf._chord_slopes`` that ``Finite`` curves took before (a curve with the
  same cumulative functions and every atom listed in ``breaks``, so it takes that path);
  both pmfs give the same delta (asserted).
* ``PldAccountant`` epsilon of 200 discrete Laplace releases (``t = 10``, sensitivity 7)
  vs dp_accounting's ``PLDAccountant`` (interval 1e-4) on ``DiscreteLaplaceDpEvent``;
  the same epsilon to 0.5% (asserted).

Ratios (baseline time / dpfast time) go to ``benchmark.extra_info`` and the summary.
Run: .venv/bin/python -m pytest bench/bench_pld_discrete.py --benchmark-only -s
"""

from __future__ import annotations

import _timing as _t
import pytest

from dpfast.accounting import PldAccountant
from dpfast.accounting import events as ev
from dpfast.accounting.pld import _curves as cv
from dpfast.accounting.pld import _discrete as dz
from dpfast.accounting.pld import _pmf as pm
from dpfast.accounting.pld._finite import Finite


class _Quadrature(cv.Curve):
    """The same pair as a plain curve: discretised by cell quadrature, atom by atom."""

    def __init__(self, f: Finite) -> None:
        self.f, self.lo, self.hi, self.inf_mass = f, f.lo, f.hi, f.inf_mass
        self.breaks = tuple(float(v) for v in f.l)
        self.symmetric = True

    def q_le(self, e):
        return self.f.q_le(e)

    def q_gt(self, e):
        return self.f.q_gt(e)

    def p_gt(self, e):
        return self.f.p_gt(e)


@pytest.mark.parametrize(("m", "sens"), [(3.0, 10), (20.0, 10)])
def test_atomic_split_vs_quadrature(benchmark, report, m: float, sens: int) -> None:
    curve = dz.discrete_gaussian(m, sens)
    dx = 0.003 / m * 1.013  # off the loss lattice: every atom is split
    ours = pm.connect_dots(curve, dx, 2**20)
    old = pm.connect_dots(_Quadrature(curve), dx, 2**20)
    for e in (0.0, 0.3):
        assert pm.delta(ours, dx, e) == pytest.approx(pm.delta(old, dx, e), rel=1e-9)
    benchmark.pedantic(lambda: pm.connect_dots(curve, dx, 2**20), rounds=5, iterations=1)
    _p = _t.pairs([lambda: pm.connect_dots(curve, dx, 2**20),
                   lambda: pm.connect_dots(_Quadrature(curve), dx, 2**20)], repeat=6)
    t_new, t_old = _p.median(0), _p.median(1)
    ratio = t_old / t_new
    benchmark.extra_info.update({"atoms": int(curve.l.size), "split_ms": t_new * 1e3,
                                 "quadrature_ms": t_old * 1e3, "speedup": ratio})
    print(f"discrete Gaussian sigma={m * sens:g} ({curve.l.size} atoms): split "
          f"{t_new * 1e3:.2f} ms, quadrature {t_old * 1e3:.0f} ms -> {ratio:.0f}x")
    report(f"pld_atomic[sigma={m * sens:g}]", f"{ratio:.0f}x faster than per-atom quadrature")


def test_discrete_laplace_vs_dp_accounting(benchmark, report) -> None:
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant as ppa

    t, sens, count, delta = 10.0, 7, 200, 1e-6

    def ours() -> float:
        acct = PldAccountant().compose(ev.DiscreteLaplace(t / sens, sensitivity=sens), count)
        return acct.get_epsilon(delta)

    def theirs() -> float:
        acct = ppa.PLDAccountant(value_discretization_interval=1e-4)
        acct.compose(dp_event.DiscreteLaplaceDpEvent(1.0 / t, sens), count)
        return acct.get_epsilon(delta)

    assert ours() == pytest.approx(theirs(), rel=5e-3)
    benchmark.pedantic(ours, rounds=3, iterations=1)
    _p = _t.pairs([ours, theirs], repeat=5)  # medians of interleaved rounds
    t_ours, t_theirs = _p.median(0), _p.median(1)
    ratio = t_theirs / t_ours
    benchmark.extra_info.update({"dpfast_ms": t_ours * 1e3, "dp_accounting_ms": t_theirs * 1e3,
                                 "speedup": ratio})
    print(f"discrete Laplace x{count}: dpfast {t_ours * 1e3:.1f} ms, dp_accounting "
          f"{t_theirs * 1e3:.0f} ms -> {ratio:.0f}x")
    report("pld_discrete_laplace[t=10,D=7,T=200]", f"{ratio:.0f}x faster than dp_accounting PLD")
