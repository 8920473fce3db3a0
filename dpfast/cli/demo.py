"""``dpfast demo``: the main job.

The demo noises a large synthetic histogram with each of dpfast's samplers, charging
every release to a privacy budget first, and prints what it did: the privacy spent,
the budget left, a refused overspend, and throughput next to numpy's insecure
``Generator.laplace`` measured in the same run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def demo(cells: int = 10_000_000, epsilon: float = 4.0, delta: float = 1e-6,
         out: Callable[[str], None] = print) -> None:
    """Noise a ``cells``-cell histogram under an (epsilon, delta) budget and report."""
    import numba

    import dpfast

    t0 = time.perf_counter()
    rng = dpfast.default_rng()  # urandom-keyed ChaCha20: the noise cannot be replayed
    out(f"dpfast {dpfast.__version__}: exact, secure DP noise (ChaCha20 CSPRNG, "
        f"{numba.get_num_threads()} threads)")

    # synthetic histogram: one count per cell, each person counted in exactly one cell
    data_rng = np.random.default_rng(2026)
    counts = data_rng.zipf(1.6, size=cells).astype(np.int64) - 1
    out(f"histogram: {cells:,} cells, {int(counts.sum()):,} people; each person "
        "changes one cell by 1 (L1 = L2 sensitivity 1)")

    budget = dpfast.Budget(epsilon=epsilon, delta=delta, accounting="zcdp")
    out(f"budget: epsilon={epsilon}, delta={delta:g} as a zCDP filter "
        f"(rho = {budget.remaining().rho:.4g}), in memory")

    share = budget.remaining().rho / 5  # four releases, then one that would overspend
    eps_share = (2 * share) ** 0.5  # epsilon-DP implies epsilon^2/2-zCDP
    mechs = [
        ("discrete Laplace", dpfast.DiscreteLaplaceMechanism(epsilon=eps_share), counts),
        ("discrete Gaussian", dpfast.DiscreteGaussianMechanism(rho=share), counts),
        ("Laplace (2^k grid)", dpfast.LaplaceMechanism(epsilon=eps_share),
         counts.astype(np.float64)),
        ("Gaussian (2^k grid)", dpfast.GaussianMechanism(rho=share),
         counts.astype(np.float64)),
    ]
    for fn in (dpfast.discrete_laplace, dpfast.discrete_gaussian):  # load compiled kernels
        fn(np.zeros(10, np.int64), 1.0, rng=rng)
    for fn in (dpfast.laplace, dpfast.gaussian):
        fn(np.zeros(10), 1.0, rng=rng)
    np_rng = np.random.default_rng(1)
    t_numpy = _best(lambda: np_rng.laplace(0.0, 4.0, size=cells))
    out(f"numpy Generator.laplace (insecure float noise, PCG64): {cells / t_numpy:.3g} "
        "cells/s")
    out("")
    for name, mech, x in mechs:
        t = time.perf_counter()
        noisy = budget.release(mech, x, note=f"demo: {name}", analyst="demo", rng=rng)
        dt = time.perf_counter() - t
        noise = np.asarray(noisy, dtype=np.float64) - x
        hw = mech.confidence_interval(0.05)
        par = (f"sigma={mech.sigma:.6g}" if hasattr(mech, "sigma")
               else f"scale={mech.scale:.6g}")
        out(f"{name:20s} {par:22s} {cells / dt:10.3g} cells/s "
            f"({t_numpy / dt:4.2f}x numpy)  noise sd {noise.std():8.3f}  "
            f"95% half-width {hw:.4g}")
        out(f"{'':20s} event {mech.event}")
    rem = budget.remaining()
    spent = budget.spent()
    out("")
    out(f"privacy spent: {len(budget.history())} releases, rho = {spent.rho:.4g} of "
        f"{budget.remaining().rho + spent.rho:.4g}; left: rho {rem.rho:.4g} "
        f"(an epsilon-DP release of epsilon <= {rem.epsilon:.4g} still fits)")
    try:
        budget.release(dpfast.DiscreteLaplaceMechanism(epsilon=2 * eps_share), counts,
                       note="one release too many", analyst="demo", rng=rng)
        out("ERROR: the overspend was not refused")
    except dpfast.BudgetExceededError as exc:
        out(f"refused before any noise was drawn: {type(exc).__name__}: {exc}")
    out(f"total demo time {time.perf_counter() - t0:.1f} s")


HELP = "noise a large histogram under a privacy budget and report privacy spent and speed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cells", type=int, default=10_000_000,
                        help="number of histogram cells (default: 10,000,000)")
    parser.add_argument("--epsilon", type=float, default=4.0,
                        help="total privacy budget epsilon (default: 4.0)")
    parser.add_argument("--delta", type=float, default=1e-6,
                        help="total privacy budget delta (default: 1e-6)")


def run(args: argparse.Namespace) -> int:
    from dpfast.cli import CliError

    if args.cells <= 0:
        raise CliError("--cells must be positive")
    if not (args.epsilon > 0 and args.epsilon < float("inf")):
        raise CliError("--epsilon must be a positive finite number")
    if not (0 <= args.delta < 1):
        raise CliError("--delta must be in [0, 1)")
    demo(cells=args.cells, epsilon=args.epsilon, delta=args.delta)
    return 0
