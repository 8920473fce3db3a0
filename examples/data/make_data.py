"""Writes the small synthetic data files that docs/cli.md's command lines read.

    python examples/data/make_data.py      (from the repository root; rewrites the files)

* ``visits.csv``: 6,000 visits of 1,500 people (``person``, ``city``, ``age``,
  ``minutes``): records, several rows per person;
* ``cities.csv``: the public list of the cities (one column ``city``), a ``--domain`` file;
* ``blocks.csv``: leaf counts of a 2-state, 6-county, 120-block hierarchy (``state``,
  ``county``, ``block``, ``pop``) for ``dpfast topdown``;
* ``flights.parquet``: 5,000 flights of 1,200 passengers (``passenger``, ``dest``,
  ``arr_delay``) for ``dpfast query``;
* ``state.bin``: a local-DP aggregate state (optimized unary encoding over 30 items,
  20,000 simulated reports) for ``dpfast ldp report``.

Everything is synthetic and seeded: the files are the same on every run.  Needs pandas and
pyarrow (the Parquet file).
"""

from __future__ import annotations

import csv
import pathlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
CITIES = ["Bordeaux", "Lille", "Lyon", "Marseille", "Nice", "Paris"]
AGES = ["18-30", "31-50", "51-70", "71+"]


def visits(rng: np.random.Generator) -> None:
    person = np.sort(rng.integers(0, 1_500, 6_000))
    home = rng.integers(0, len(CITIES), 1_500)  # most of a person's visits in one city
    city = np.where(rng.random(6_000) < 0.8, home[person], rng.integers(0, len(CITIES), 6_000))
    age = rng.integers(0, len(AGES), 1_500)[person]
    minutes = np.clip(rng.gamma(2.0, 20.0, 6_000).round(), 1, 240).astype(int)
    with open(HERE / "visits.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["person", "city", "age", "minutes"])
        for row in zip(person, city, age, minutes):
            w.writerow([row[0], CITIES[row[1]], AGES[row[2]], row[3]])
    (HERE / "cities.csv").write_text("city\n" + "\n".join(CITIES) + "\n")


def blocks(rng: np.random.Generator) -> None:
    with open(HERE / "blocks.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["state", "county", "block", "pop"])
        for s in range(2):
            for c in range(3):
                for b in range(20):
                    w.writerow([f"S{s}", f"S{s}-C{c}", f"S{s}-C{c}-B{b:02d}",
                                int(rng.poisson(rng.choice([5, 40, 300])))])


def flights(rng: np.random.Generator) -> None:
    import pandas as pd

    n = 5_000
    frame = pd.DataFrame({"passenger": rng.integers(0, 1_200, n),
                          "dest": rng.choice(["ATL", "BOS", "LAX", "ORD", "SFO"], n),
                          "arr_delay": rng.normal(8, 35, n).round().astype(int)})
    frame.to_parquet(HERE / "flights.parquet", index=False)


def ldp_state(rng: np.random.Generator) -> None:
    from dpfast import local

    proto = local.OptimizedUnaryEncoding(k=30, epsilon=2.0)
    server = local.Aggregator(proto)
    values = rng.zipf(1.6, 20_000) % 30
    # a fixed public key: synthetic values, and the same file on every run
    server.add(local.randomize(proto, values, rng=bytes(32)))
    server.save(str(HERE / "state.bin"))


def main() -> None:
    rng = np.random.default_rng(41)
    visits(rng)
    blocks(rng)
    flights(rng)
    ldp_state(rng)
    for name in ("visits.csv", "cities.csv", "blocks.csv", "flights.parquet", "state.bin"):
        print(f"{name:16s} {(HERE / name).stat().st_size:>8,} bytes")


if __name__ == "__main__":
    main()
