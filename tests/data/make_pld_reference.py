"""Generate ``pld_reference.json``: dp_accounting's pessimistic PLD epsilons.

Run (slow, minutes):  python tests/data/make_pld_reference.py
Each entry: Poisson-subsampled Gaussian (add/remove), dp_accounting's
``PLDAccountant(value_discretization_interval=1e-4)`` (pessimistic, connect-the-dots).
"""

from __future__ import annotations

import json
import pathlib
import time

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant as ppa

# (sampling rate q, noise multiplier sigma, steps, delta)
CONFIGS = [
    (1e-3, 0.5, 1, 1e-5), (1e-3, 1.0, 100, 1e-8), (1e-3, 0.8, 10000, 1e-6),
    (1e-3, 2.0, 100000, 1e-5), (1e-3, 0.6, 100000, 1e-8),
    (0.004, 0.8, 100000, 1e-5), (0.004, 1.1, 1000, 1e-5), (256 / 60000, 1.1, 14062, 1e-5),
    (0.004, 4.0, 10000, 1e-8), (0.01, 1.1, 1000, 1e-5), (0.01, 4.0, 10000, 1e-5),
    (0.01, 0.5, 10, 1e-6), (0.01, 1.0, 100000, 1e-8), (0.01, 2.0, 1, 1e-3),
    (0.02, 1.5, 5000, 1e-6), (0.05, 1.0, 100, 1e-5), (0.05, 2.0, 10000, 1e-8),
    (0.05, 10.0, 100000, 1e-6), (0.1, 0.8, 10, 1e-5), (0.1, 3.0, 1000, 1e-3),
    (0.1, 5.0, 100000, 1e-5), (0.1, 1.0, 1, 1e-8), (0.2, 2.0, 300, 1e-6),
    (0.25, 4.0, 3000, 1e-5), (0.25, 10.0, 100000, 1e-8), (0.3, 1.5, 30, 1e-3),
    (0.5, 0.5, 1, 1e-5), (0.5, 2.0, 100, 1e-8), (0.5, 5.0, 1000, 1e-6),
    (0.5, 10.0, 10000, 1e-5), (1.0, 1.0, 1, 1e-5), (1.0, 5.0, 100, 1e-8),
]


def reference(q: float, sigma: float, steps: int, delta: float) -> float:
    acct = ppa.PLDAccountant(value_discretization_interval=1e-4)
    event = dpa.GaussianDpEvent(sigma)
    if q < 1.0:
        event = dpa.PoissonSampledDpEvent(q, event)
    acct.compose(event, steps)
    return float(acct.get_epsilon(delta))


def main() -> None:
    out = []
    for q, s, t, d in CONFIGS:
        t0 = time.perf_counter()
        e = reference(q, s, t, d)
        print(f"q={q:g} sigma={s:g} steps={t} delta={d:g}: eps={e:.6f} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        out.append({"q": q, "sigma": s, "steps": t, "delta": d, "epsilon": e})
    path = pathlib.Path(__file__).with_name("pld_reference.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
