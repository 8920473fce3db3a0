"""DP-SGD with Opacus on dpfast's secure noise: a small CNN on scikit-learn's digits (8x8).

Trains the same convolutional network without privacy and with DP-SGD at epsilon 1, 3 and
8 (delta 1e-5) through Opacus's ``PrivacyEngine.make_private_with_epsilon``, with
:func:`dpfast.compat.opacus.install` active: every noise value is dpfast's exact grid
Gaussian on ChaCha20 (``secure_mode=True`` without torchcsprng), every Poisson batch an
exact Bernoulli sample, and the noise multiplier is calibrated with dpfast's PLD accountant
(``accountant="dpfast_pld"``).  It prints the test accuracy next to the non-private model's
and the epsilon spent according to dpfast's PLD accountant and to Opacus's PRV accountant.

Run (``pip install 'dpfast[torch]' scikit-learn``)::

    python examples/dpsgd_opacus.py                  # fresh randomness (each run differs)
    python examples/dpsgd_opacus.py --key 0011...    # 64 hex digits: replayable
    python examples/dpsgd_opacus.py --epochs 2       # a quick run

The privacy unit is one training image (add/remove one record).  Pixel values are scaled
by the public constant 16 (the digits' range), so no statistic of the data is used
outside DP-SGD.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import dpfast.compat.opacus as dpo

EPSILONS = (1.0, 3.0, 8.0)
DELTA = 1e-5
BATCH = 256  # expected batch size of the DP runs (Poisson sampling rate BATCH / n)
CLIP = 1.0
LR = 2.0  # the DP runs: plain SGD on the noisy mean gradient
BATCH_PLAIN, LR_PLAIN = 64, 0.1  # non-private: SGD with momentum 0.9

# torch's note about Opacus's full backward hooks on the input layer (harmless here)
warnings.filterwarnings("ignore", "Full backward hook is firing", UserWarning)
# Opacus's PRV accountant sizes its domain with an RDP bound that warns at these settings
warnings.filterwarnings("ignore", "Optimal order is the largest alpha", UserWarning)


def load() -> tuple[TensorDataset, TensorDataset]:
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    return (TensorDataset(torch.from_numpy(x_tr), torch.from_numpy(y_tr)),
            TensorDataset(torch.from_numpy(x_te), torch.from_numpy(y_te)))


def make_model() -> nn.Module:
    """Conv(1->8) - pool - Conv(8->16) - pool - linear: 1,898 parameters (no batch
    statistics, so per-example gradients are well defined)."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 8 x 4 x 4
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 16 x 2 x 2
        nn.Flatten(), nn.Linear(64, 10))


def accuracy(model: nn.Module, data: TensorDataset) -> float:
    x, y = data.tensors
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def run_epochs(model: nn.Module, opt: torch.optim.Optimizer, loader: DataLoader,
               epochs: int) -> None:
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            if len(xb) == 0:  # an empty Poisson batch
                continue
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()


def train_plain(train: TensorDataset, epochs: int) -> nn.Module:
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=LR_PLAIN, momentum=0.9)
    run_epochs(model, opt, DataLoader(train, batch_size=BATCH_PLAIN, shuffle=True), epochs)
    return model


def train_dp(train: TensorDataset, epsilon: float, epochs: int) -> tuple[nn.Module, Any]:
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    engine = PrivacyEngine(accountant="dpfast_pld", secure_mode=True)
    model, opt, loader = engine.make_private_with_epsilon(
        module=model, optimizer=opt, data_loader=DataLoader(train, batch_size=BATCH),
        target_epsilon=epsilon, target_delta=DELTA, epochs=epochs, max_grad_norm=CLIP)
    run_epochs(model, opt, loader, epochs)
    return model, engine


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=20, help="training epochs (default 20)")
    parser.add_argument("--key", help="64 hex digits: a replayable run (whoever holds the "
                                      "key can remove the noise)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    key = bytes.fromhex(args.key) if args.key else None
    train, test = load()
    t0 = time.perf_counter()
    plain = accuracy(train_plain(train, args.epochs), test)
    print(f"digits: {len(train)} train / {len(test)} test images, {args.epochs} epochs, "
          f"expected DP batch {BATCH}, clip {CLIP}, delta {DELTA:g}")
    print(f"non-private accuracy: {plain:.3f}")
    print(f"{'target eps':>10} {'sigma':>7} {'accuracy':>9} {'eps (dpfast PLD)':>17} "
          f"{'eps (Opacus PRV)':>17}")
    within = True
    with dpo.patched(key):
        for eps in EPSILONS:
            model, engine = train_dp(train, eps, args.epochs)
            spent = engine.get_epsilon(DELTA)
            prv = PRVAccountant()
            prv.history = list(engine.accountant.history)
            sigma = engine.accountant.history[0][0]
            print(f"{eps:>10g} {sigma:>7.3f} {accuracy(model, test):>9.3f} {spent:>17.3f} "
                  f"{prv.get_epsilon(DELTA):>17.3f}")
            within = within and spent <= eps
    if within:
        print("every DP run spent at most its target epsilon (dpfast PLD, an upper bound)")
    print(f"(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
