"""Contribution bounding's row sampling of PipelineDP on dpfast's ChaCha20.

PipelineDP bounds contributions by sampling: ``LocalBackend.sample_fixed_per_key`` keeps
``n`` of a key's ``k > n`` values with ``np.random.choice(range(k), n, replace=False)``, and
``sampling_utils.choose_from_list_without_replacement`` keeps ``size`` of a list the same way
-- numpy's global Mersenne Twister (predictable from its outputs; shared with any other code
that seeds it).  Under ``install()`` both draw :func:`sample_indices`: a partial
Fisher-Yates shuffle whose swaps use exactly uniform indices (rejection on 64-bit ChaCha20
words, :func:`dpfast.compat._random_state.uniform_below`).  Same law as numpy's
``choice(..., replace=False)`` (``permutation(k)[:n]``): every ordered ``n``-subset with
probability ``(k - n)! / k!``, exactly; the bound (at most ``n`` kept) does not depend on the
randomness at all.  A pipeline built while installed keeps that installation's generator
when it is evaluated later (LocalBackend collections are lazy).
"""

from __future__ import annotations

from typing import Any

from pipeline_dp import pipeline_backend as _pb

from dpfast.compat._random_state import Words, shared_generator, uniform_below, words_for
from dpfast.compat.pipeline_dp._state import gen as _gen

__all__ = ["sample_indices", "sample_fixed_per_key", "choose_from_list_without_replacement"]


def sample_indices(k: int, n: int, words: Words) -> list[int]:
    """``n`` distinct indices of ``range(k)`` in uniformly random order (``n <= k``):
    the first ``n`` steps of a Fisher-Yates shuffle, exactly."""
    idx = list(range(k))
    for i in range(n):
        j = i + uniform_below(words, k - i)
        idx[i], idx[j] = idx[j], idx[i]
    return idx[:n]


def _words() -> Words:
    gen = _gen()
    return words_for(gen if gen is not None else shared_generator())


def sample_fixed_per_key(self: Any, col: Any, n: int, stage_name: str | None = None) -> Any:
    """dpfast replacement of ``LocalBackend.sample_fixed_per_key``: PipelineDP's code with
    :func:`sample_indices` instead of ``np.random.choice``."""
    words = _words()  # the generator installed when the pipeline is built

    def sample_fixed_per_key_generator():
        for key, values in self.group_by_key(col):
            if len(values) > n:
                values = [values[i] for i in sample_indices(len(values), n, words)]
            yield key, values

    return _pb.ReiterableLazyIterable(sample_fixed_per_key_generator())


def choose_from_list_without_replacement(a: list, size: int) -> list:
    """dpfast replacement of ``sampling_utils.choose_from_list_without_replacement`` (the
    same result type: the list itself when it is short enough, else a new list)."""
    if len(a) <= size:
        return a
    return [a[i] for i in sample_indices(len(a), int(size), _words())]

