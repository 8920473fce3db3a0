"""Track a privacy budget in a durable ledger file across several releases.

Opens (or creates) a SQLite ledger, makes releases until the budget refuses one, then
prints the audit history.  The ledger survives restarts: run the script twice with the same
``--ledger`` and the second run starts from what the first one spent.

Run::

    python examples/budget_ledger.py --ledger /tmp/budget.sqlite
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import dpfast


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", default=None,
                        help="ledger file (default: a new file in a temporary directory)")
    args = parser.parse_args(argv)
    path = args.ledger or os.path.join(tempfile.mkdtemp(), "budget.sqlite")

    budget = dpfast.Budget(epsilon=1.0, delta=1e-6, ledger=path)
    counts = np.array([120, 43, 7, 0, 310], dtype=np.int64)
    mech = dpfast.DiscreteLaplaceMechanism(epsilon=0.25)
    released = 0
    while True:
        try:
            noisy = budget.release(mech, counts, note=f"weekly table #{released + 1}",
                                   analyst="example")
        except dpfast.BudgetExceededError as exc:
            print(f"refused before any noise was drawn: {exc}")
            break
        released += 1
        print(f"release {released}: {noisy.tolist()}")
    print(budget)  # what was spent, and the largest next release that still fits
    records = budget.history(include_refused=True)
    print(f"ledger {path}: {len(records)} records (refusals included)")
    for charge in records:
        print(f"  #{charge.id} {charge.status:8} {charge.note}: {charge.event} "
              f"by {charge.analyst} ({charge.user}@{charge.host}, pid {charge.pid})")
    print(f"look at it with: dpfast ledger show {path}")


if __name__ == "__main__":
    main()
