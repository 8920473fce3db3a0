"""The local-DP release paths: :class:`dpfast.local.Client`, :class:`~dpfast.local.ClientPool`
and :func:`~dpfast.local.randomize`.

Local DP's neighbours are two inputs of one client: a sequence of values and the same
sequence with one value changed.  What the server sees is the reports and whether each
report came; the audit checks that the *number* of reports and the refusals are the same
on both (the reports themselves differ: they randomize different values).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from typing import Any

from dpfast.testing._observe import Raised
from dpfast.testing._registry import Case, ReleasePath, register

_DAY0 = 0.0


def _grr() -> Any:
    from dpfast.local import GeneralizedRandomizedResponse

    return GeneralizedRandomizedResponse(4, 1.0)


def _rappor() -> Any:
    from dpfast.local import Rappor

    return Rappor(num_bits=16, num_hashes=2, num_cohorts=4, hash_seed=7)


def _outcome(call: Callable[[], Any], secret: str | None = None) -> Any:
    try:
        return call()
    except Exception as exc:
        r = Raised.of(exc)
        if secret:  # the client's own random id is in its messages: not about the values
            r = Raised(r.type, r.message.replace(secret, "<client>"))
        return r


def client_run(protocol: Callable[[], Any], budget: float) -> Callable[[Any, bytes], Any]:
    """``run(values, rng)``: a new client (state in a temporary directory) reports each
    value in turn; returns each report batch or refusal."""

    def run(values: Any, rng: bytes) -> Any:
        from dpfast.local import Client

        with tempfile.TemporaryDirectory() as tmp:
            c = Client(protocol(), os.path.join(tmp, "client.db"), budget=budget,
                       clock=lambda: _DAY0, rng=rng)
            try:
                secret = str(c.client_id)
                return tuple(_outcome(functools.partial(c.report, [v]), secret)
                             for v in values)
            finally:
                c.close()

    return run


def pool_run(protocol: Callable[[], Any], budget: float) -> Callable[[Any, bytes], Any]:
    """``run(values, rng)``: a pool of three clients; client 0 reports each value in turn
    (and clients 1, 2 one value each)."""

    def run(values: Any, rng: bytes) -> Any:
        from dpfast.local import ClientPool

        with tempfile.TemporaryDirectory() as tmp:
            p = ClientPool(protocol(), os.path.join(tmp, "pool"), num_clients=3, budget=budget,
                           clock=lambda: _DAY0, rng=rng)
            out = [_outcome(functools.partial(p.report, [1, 2], [values[0], values[0]]))]
            out += [_outcome(functools.partial(p.report, [0], [v])) for v in values]
            return tuple(out)

    return run


def _randomize_run(protocol: Callable[[], Any]) -> Callable[[Any, bytes], Any]:
    def run(values: Any, rng: bytes) -> Any:
        from dpfast.local import randomize

        return randomize(protocol(), list(values), rng=rng)

    return run


def grr_cases() -> list[Case]:
    """One client's values, and the same with one value changed (in and beyond budget)."""
    return [Case("change-last", (0, 0, 0, 0, 0), (0, 0, 0, 0, 3), ()),
            Case("change-first", (1, 2, 3, 0, 1), (2, 2, 3, 0, 1), ())]


def rappor_cases() -> list[Case]:
    """Repeated values and the same with the last one changed (RAPPOR's memoized
    responses make repeats cheaper than new values)."""
    return [Case("repeat-vs-new", ("v",) * 5, ("v",) * 4 + ("w",), ()),
            Case("all-new", ("a", "b", "c", "d", "e"), ("a", "b", "c", "d", "f"), ())]


register(ReleasePath("local.Client/grr", ("dpfast.local.Client.report",),
                     client_run(_grr, 3.0), cases=grr_cases))
register(ReleasePath("local.Client/rappor", ("dpfast.local.Client.report",),
                     client_run(_rappor, 4.4), cases=rappor_cases))
register(ReleasePath("local.ClientPool/grr", ("dpfast.local.ClientPool.report",),
                     pool_run(_grr, 3.0), cases=grr_cases))
register(ReleasePath("local.ClientPool/rappor", ("dpfast.local.ClientPool.report",),
                     pool_run(_rappor, 4.4), cases=rappor_cases))
register(ReleasePath("local.randomize/grr", ("dpfast.local.randomize",),
                     _randomize_run(_grr), cases=grr_cases))
