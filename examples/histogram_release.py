"""Publish a histogram of ages with exact discrete Laplace noise under a privacy budget.

Each person contributes one row (their age), so adding or removing one person changes one
bin by 1 (L1 sensitivity 1).  The script charges the budget *before* drawing noise, prints
the noisy histogram next to the exact 95% confidence half-width, and shows the budget left.

Run::

    python examples/histogram_release.py                # fresh randomness
    python examples/histogram_release.py --people 1000  # a smaller population
"""

from __future__ import annotations

import argparse

import numpy as np

import dpfast


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=100_000, help="number of people")
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon of the release")
    args = parser.parse_args(argv)

    # synthetic raw data: one age per person (stand-in for a real, sensitive column)
    ages = np.random.default_rng(7).integers(0, 100, size=args.people)
    edges = np.arange(0, 101, 10)
    counts, _ = np.histogram(ages, bins=edges)

    budget = dpfast.Budget(epsilon=2.0, delta=1e-6)           # in memory; ledger= for a file
    mech = dpfast.DiscreteLaplaceMechanism(epsilon=args.epsilon)  # sensitivity 1
    noisy = budget.release(mech, counts.astype(np.int64), note="age histogram")
    half = mech.confidence_interval(0.05)

    print(f"age histogram of {args.people:,} people, epsilon = {args.epsilon} "
          f"(discrete Laplace, scale {mech.scale:.4g}); 95% of cells within ±{half}")
    for lo, hi, c in zip(edges[:-1], edges[1:], noisy):
        print(f"  {lo:3d}-{hi - 1:<3d} {int(c):>8,d}")
    print(f"budget: {budget}")


if __name__ == "__main__":
    main()
