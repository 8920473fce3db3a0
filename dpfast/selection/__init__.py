"""Private selection: exact exponential mechanism, permute-and-flip, report-noisy-max, top-k.

Every function here is *exact* in the sense of docs/design.md: assuming ideal random bits,
the output distribution equals the stated one exactly, with utilities taken as the
binary rationals their float64 values encode and ``epsilon`` and ``sensitivity`` as
exact rationals.

Gumbel-max (``exponential``, ``report_noisy_max(noise="gumbel")``, ``top_k``)
-------------------------------------------------------------------------------
Candidate ``i`` gets the score ``c * (u_i - u_max) - ln(-ln U_i)`` with ``U_i`` uniform
on (0, 1); the index of the largest score is distributed exactly as
``P(i) = exp(c u_i) / sum_j exp(c u_j)`` (the Gumbel-max trick), and the indices of
the ``k`` largest scores, in order, are distributed as ``k`` sequential draws without
replacement (Plackett-Luce), i.e. as the peeling exponential mechanism.

A float Gumbel has a bounded range (about ``[-3.6, 36.7]`` for 53-bit uniforms), so a
naive ``argmax(c u + gumbel)`` gives every candidate more than ~40/c utility units
behind the leader probability exactly 0, which breaks pure DP.  Here each ``U_i`` is a
*lazily refined* uniform: its first 64 bits come from the bulk ChaCha20 keystream and
bound the score to a small interval (rigorous float error bounds, numba kernel in
:mod:`dpfast._kernels.selection`).  The winner is certified when its lower bound exceeds
every other upper bound.  Otherwise (rare: about ``1e-13`` per row, or when a word is
within ``2^-52`` of 1, or under :func:`force_exact`) the contending candidates'
uniforms are refined with fresh random bits (64 at a time) and their scores compared
with exact integer interval arithmetic (:func:`ln_bounds`) until the intervals separate.
Nothing is resampled, so a candidate 60 (or 6000) units behind keeps its exact, tiny,
nonzero probability.

Permute-and-flip (``permute_and_flip``, ``report_noisy_max(noise="exponential")``)
-----------------------------------------------------------------------------------
Each candidate's coin is Bernoulli(exp(-c (u_max - u_i))), decided exactly (certified
float comparison of a 64-bit uniform with ``exp``, exact continuation with
:func:`dpfast.noise._exact.u_less_exp` otherwise).  Permute-and-flip returns the first head
in a uniformly random order; since the order is independent of the coins, that is a
uniformly random head, which is drawn exactly (Lemire's method).

Batches
-------
Two-dimensional ``utilities`` of shape ``(batch, candidates)`` run one independent
selection per row, vectorized (numba, parallel over row segments).  Each row is a
separate mechanism: selections over the same dataset compose (``batch`` times the
row's event).

Modules
-------
``gumbel`` (:func:`exponential`), ``permute_flip`` (:func:`permute_and_flip`),
``noisy_max`` (:func:`report_noisy_max`, :func:`top_k`), ``events`` (their privacy
events), ``continuation`` (the exact path: :func:`ln_bounds`, refined Gumbel contests);
private: ``_validate`` (arguments, :func:`force_exact`), ``_bits`` (keystream words).
Kernels live in :mod:`dpfast._kernels.selection`.

Reproducibility: all randomness comes from ``rng`` (a :class:`dpfast.Generator`, a
32-byte key, or ``None`` for fresh OS entropy).  With a fixed key the result is a
deterministic function of the key, the call sequence and the utilities' differences, so
adding a constant that keeps all utilities exactly representable does not change it.
"""

from __future__ import annotations

from dpfast.selection._validate import force_exact
from dpfast.selection.continuation import ln_bounds
from dpfast.selection.events import (
    exponential_event,
    permute_and_flip_event,
    report_noisy_max_event,
    top_k_event,
)
from dpfast.selection.gumbel import exponential
from dpfast.selection.noisy_max import report_noisy_max, top_k
from dpfast.selection.permute_flip import permute_and_flip

__all__ = [
    "exponential",
    "permute_and_flip",
    "report_noisy_max",
    "top_k",
    "exponential_event",
    "permute_and_flip_event",
    "report_noisy_max_event",
    "top_k_event",
    "force_exact",
    "ln_bounds",
]
