"""Publish a table of purchases per (region, product) from raw transaction records.

Each customer may appear in many transactions.  The release keeps at most 2 products and 3
transactions per product for each customer (contribution bounding, uniform and keyed per
customer), adds exact discrete Laplace noise, publishes only the products that enough
customers bought (private partition selection: a product bought by one customer is published
with probability at most delta), and prints the table with 95% intervals and its accuracy --
from the noise law alone, and measured against the true bounded table (for evaluation only:
that table is the sensitive data).

Run::

    python examples/table_release.py                     # fresh randomness
    python examples/table_release.py --customers 2000    # a smaller population
"""

from __future__ import annotations

import argparse

import numpy as np

import dpfast
from dpfast import tables


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=50_000, help="number of customers")
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon of the release")
    args = parser.parse_args(argv)

    # synthetic raw records: 1 + Poisson(4) transactions per customer
    r = np.random.default_rng(3)
    n_tx = 1 + r.poisson(4.0, args.customers)
    customer = np.repeat(np.arange(args.customers), n_tx)
    region = np.array(["north", "south", "east", "west"])[r.integers(0, 4, args.customers)]
    region = region[customer]
    weights = 1.0 / np.arange(1, 501) ** 1.2
    product = np.array([f"P{i:03d}" for i in range(500)])[
        r.choice(500, customer.size, p=weights / weights.sum())]

    budget = dpfast.Budget(epsilon=2 * args.epsilon, delta=1e-6, accounting="basic")
    rng = dpfast.default_rng()
    rel = tables.count((region, product), customer, epsilon=args.epsilon, delta=1e-7,
                       max_partitions=2, max_per_partition=3, rng=rng, budget=budget,
                       note="purchases by region and product")
    print(f"{customer.size:,} transactions of {args.customers:,} customers -> "
          f"{len(rel)} published (region, product) cells; threshold {rel.threshold}")
    print(f"event: {rel.event}; budget left: {budget.remaining()}")
    df = rel.to_columns(0.05)
    for i in np.argsort(-rel.counts)[:8]:
        print(f"  {df['key0'][i]:6s} {df['key1'][i]}  {rel.counts[i]:7d}  "
              f"[{df['ci_low'][i]}, {df['ci_high'][i]}]")
    truth_keys, truth_counts, _ = tables.bound_contributions(
        (region, product), customer, max_partitions=2, max_per_partition=3, rng=rng)
    truth = dict(zip(zip(truth_keys[0].tolist(), truth_keys[1].tolist()),
                     truth_counts.tolist()))
    print("accuracy:")
    print(rel.accuracy(truth))


if __name__ == "__main__":
    main()
