"""Differentially private logistic regression with DP-SGD on scikit-learn's breast cancer data.

Trains a logistic regression with :func:`dpfast.dpsgd.clip_and_noise` (per-example L2
clipping, exact secure Gaussian noise) at epsilon 0.5, 1, 2 and 8 (delta 1e-5), with the
noise multiplier from :func:`dpfast.accounting.calibrate_noise_multiplier` for Poisson
sampling, and prints the test accuracy next to the non-private model's.

Run::

    python examples/dpsgd_logistic.py            # fresh randomness (each run differs)
    python examples/dpsgd_logistic.py --key 00112233...  # 64 hex digits: replayable

The privacy unit is one training example (add/remove one record); the feature
standardisation uses the training set's statistics and is not privatised here (a real
deployment would use public or DP estimates of the feature scales).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import dpfast
from dpfast.accounting import calibrate_noise_multiplier, dpsgd_epsilon

EPSILONS = (0.5, 1.0, 2.0, 8.0)
DELTA = 1e-5
SAMPLING_RATE = 0.2  # Poisson sampling: each example joins a batch with this probability
STEPS = 100
CLIP_NORM = 1.0
LEARNING_RATE = 1.0
RUNS = 5  # independent training runs per epsilon (mean and spread are printed)


def load() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x, y = load_breast_cancer(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    scaler = StandardScaler().fit(x_tr)
    x_tr, x_te = scaler.transform(x_tr), scaler.transform(x_te)
    # a constant feature for the bias
    x_tr = np.hstack([x_tr, np.ones((len(x_tr), 1))])
    x_te = np.hstack([x_te, np.ones((len(x_te), 1))])
    return x_tr, y_tr.astype(np.float64), x_te, y_te.astype(np.float64)


def per_example_gradients(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gradients of the logistic loss, one row per example."""
    p = 0.5 * (1.0 + np.tanh(0.5 * (x @ w)))  # sigmoid, overflow-free
    return (p - y)[:, None] * x


def train_dp(
    x: np.ndarray, y: np.ndarray, noise_multiplier: float, rng: dpfast.Generator
) -> np.ndarray:
    n, d = x.shape
    w = np.zeros(d)
    expected_batch = SAMPLING_RATE * n  # public denominator (the actual size is private)
    for _ in range(STEPS):
        batch = rng.random(n) < SAMPLING_RATE  # Poisson sampling with secure bits
        grads = per_example_gradients(w, x[batch], y[batch])
        w -= LEARNING_RATE * dpfast.dpsgd.clip_and_noise(
            grads, CLIP_NORM, noise_multiplier, rng=rng, batch_size=expected_batch
        )
    return w


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((x @ w > 0) == (y == 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", help="64 hex digits: replay a run (the key removes the noise)")
    args = parser.parse_args()
    rng = dpfast.default_rng(bytes.fromhex(args.key) if args.key else None)

    start = time.perf_counter()
    x_tr, y_tr, x_te, y_te = load()
    baseline = LogisticRegression(max_iter=1000).fit(x_tr[:, :-1], y_tr)
    base_acc = baseline.score(x_te[:, :-1], y_te)
    print(f"breast cancer: {len(x_tr)} train / {len(x_te)} test examples, {x_tr.shape[1]} params")
    print(
        f"DP-SGD: Poisson rate {SAMPLING_RATE}, {STEPS} steps, clip {CLIP_NORM}, "
        f"lr {LEARNING_RATE}, delta {DELTA:g}, {RUNS} runs each"
    )
    print(f"{'epsilon':>8} {'sigma':>8} {'eps(sigma)':>11} {'test accuracy':>22}")
    for eps in EPSILONS:
        sigma = calibrate_noise_multiplier(eps, DELTA, SAMPLING_RATE, STEPS)
        spent = dpsgd_epsilon(SAMPLING_RATE, sigma, STEPS, DELTA)
        accs = [accuracy(train_dp(x_tr, y_tr, sigma, rng), x_te, y_te) for _ in range(RUNS)]
        print(
            f"{eps:>8g} {sigma:>8.3f} {spent:>11.4f} "
            f"{np.mean(accs):>14.3f} +- {np.std(accs):.3f}"
        )
    print(f"{'inf':>8} {'-':>8} {'-':>11} {base_acc:>14.3f}   (non-private, scikit-learn)")
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
