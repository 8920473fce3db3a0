"""``dpfast epsilon``: epsilon of a DP-SGD run under RDP and PLD accounting.

Prints epsilon for both accountants (the one chosen with ``--accountant`` first) and,
with ``--plot FILE.png``, draws epsilon against the number of steps for both
(matplotlib, the optional ``plot`` extra; imported only then).
"""

from __future__ import annotations

import argparse
import math

HELP = "epsilon of DP-SGD (Poisson-subsampled Gaussian) under RDP and PLD accounting"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sampling-rate", type=float, required=True, metavar="Q",
                        help="Poisson sampling probability q in (0, 1] (batch / dataset size)")
    parser.add_argument("--noise-multiplier", type=float, required=True, metavar="S",
                        help="noise standard deviation / clipping norm (> 0)")
    parser.add_argument("--steps", type=int, required=True, metavar="T",
                        help="number of training steps (> 0)")
    parser.add_argument("--delta", type=float, required=True, metavar="D",
                        help="target delta in (0, 1)")
    parser.add_argument("--accountant", choices=("rdp", "pld"), default="pld",
                        help="accountant listed first (both are printed; default: pld)")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="also draw epsilon against steps for RDP and PLD into this PNG "
                             "(needs matplotlib: pip install 'dpfast[plot]')")


def _curve(q: float, s: float, steps: int, d: float, n: int = 24
           ) -> tuple[list[int], list[float], list[float]]:
    from dpfast.accounting import dpsgd_epsilon

    ts = sorted({max(1, round(math.exp(math.log(steps) * i / (n - 1)))) for i in range(n)})
    rdp = [dpsgd_epsilon(q, s, t, d) for t in ts]
    pld = [dpsgd_epsilon(q, s, t, d, accountant="pld") for t in ts]
    return ts, rdp, pld


def _plot(path: str, q: float, s: float, steps: int, d: float) -> None:
    try:
        import matplotlib
    except ImportError:
        from dpfast.cli import CliError

        raise CliError("--plot needs matplotlib: pip install 'dpfast[plot]'", 1) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpfast.cli import write_atomic

    ts, rdp, pld = _curve(q, s, steps, d)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(ts, rdp, "o-", ms=3, label="RDP (Mironov et al.)")
    ax.plot(ts, pld, "s-", ms=3, label="PLD (connect-the-dots, FFT)")
    ax.set_xscale("log")
    ax.set_xlabel("steps")
    ax.set_ylabel(f"epsilon at delta = {d:g}")
    ax.set_title(f"DP-SGD: q = {q:g}, noise multiplier = {s:g}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from dpfast.accounting import dpsgd_epsilon

    q, s, t, d = args.sampling_rate, args.noise_multiplier, args.steps, args.delta
    if args.steps <= 0:
        raise ValueError("--steps must be > 0")
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise ValueError("--plot must name a .png file")
    order = [args.accountant] + [a for a in ("rdp", "pld") if a != args.accountant]
    for name in order:
        e = dpsgd_epsilon(q, s, t, d, accountant=name)
        print(f"{name}: epsilon = {e:.6g}  (q={q:g}, noise_multiplier={s:g}, steps={t}, "
              f"delta={d:g})")
    if args.plot is not None:
        _plot(args.plot, q, s, t, d)
        print(f"plot written to {args.plot}")
    return 0
