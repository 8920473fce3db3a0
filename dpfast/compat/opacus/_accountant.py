"""Opacus accountants (``IAccountant``) backed by dpfast's PLD and RDP accountants."""

from __future__ import annotations

import math
from typing import Any

from opacus.accountants import IAccountant

from dpfast.accounting import PldAccountant, RdpAccountant
from dpfast.accounting import events as ev

__all__ = ["DpfastPldAccountant", "DpfastRdpAccountant", "REGISTRY"]


def _check_step(noise_multiplier: Any, sample_rate: Any) -> tuple[float, float]:
    for name, value in (("noise_multiplier", noise_multiplier), ("sample_rate", sample_rate)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(
                value, "__float__"):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    z, q = float(noise_multiplier), float(sample_rate)
    if not (math.isfinite(z) and z >= 0):
        raise ValueError(f"noise_multiplier must be finite and >= 0, got {noise_multiplier!r}")
    if not (0 <= q <= 1):
        raise ValueError(f"sample_rate must lie in [0, 1], got {sample_rate!r}")
    return z, q


class _DpfastAccountant(IAccountant):
    """Shared part: Opacus's ``history`` of ``(noise_multiplier, sample_rate, steps)``.

    Opacus's calibration (``opacus.accountants.utils.get_noise_multiplier``) assigns
    ``history`` directly and calls :meth:`get_epsilon`, so the epsilon is always computed
    from ``history`` (cached for the last history seen).
    """

    history: list[tuple[float, float, int]]

    def __init__(self) -> None:
        super().__init__()
        self._cached: tuple[Any, float] | None = None

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (consecutive equal steps share one entry)."""
        z, q = _check_step(noise_multiplier, sample_rate)
        if self.history and self.history[-1][0] == z and self.history[-1][1] == q:
            self.history[-1] = (z, q, self.history[-1][2] + 1)
        else:
            self.history.append((z, q, 1))

    def __len__(self) -> int:
        """Number of entries of ``history`` (as Opacus's own accountants)."""
        return len(self.history)

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """An upper bound on the epsilon of the steps so far at ``delta``.

        Extra arguments (Opacus passes its accountants' options, e.g. ``eps_error``, through
        ``make_private_with_epsilon``) are accepted and have no effect.
        """
        d = float(delta)
        if not (0 < d < 1):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        key = (d, tuple((float(z), float(q), int(t)) for z, q, t in self.history))
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        eps = self._epsilon(d, key[1])
        self._cached = (key, eps)
        return eps

    def _compose(self, acct: Any, history: tuple[tuple[float, float, int], ...]) -> Any | None:
        """Compose every entry into ``acct``; None if some step is not private (z = 0)."""
        for z, q, t in history:
            if t <= 0 or q == 0:
                continue  # nothing of any record was used
            if z == 0:
                return None
            acct.compose(ev.PoissonSampled(ev.Gaussian(z), q), t)
        return acct

    def _epsilon(self, delta: float, history: tuple[tuple[float, float, int], ...]) -> float:
        raise NotImplementedError  # pragma: no cover

    def load_state_dict(self, state_dict: Any) -> None:
        super().load_state_dict(state_dict)
        self.history = [(float(z), float(q), int(t)) for z, q, t in self.history]
        self._cached = None


class DpfastPldAccountant(_DpfastAccountant):
    """Opacus accountant on dpfast's :class:`~dpfast.accounting.PldAccountant`.

    Use as ``PrivacyEngine(accountant="dpfast_pld")`` while
    :func:`dpfast.compat.opacus.install` is active (also in ``make_private_with_epsilon``),
    or assign an instance to ``engine.accountant``.

    Privacy
    -------
    Each history entry ``(z, q, T)`` is ``T`` steps of the Poisson-subsampled Gaussian
    mechanism with noise multiplier ``z`` and rate ``q`` (add/remove-one neighbouring
    relation; Abadi et al. 2016), i.e. ``SelfComposed(PoissonSampled(Gaussian(z), q), T)``.
    :meth:`get_epsilon` returns the PLD accountant's certified upper bound on the exact
    epsilon of the composition (pessimistic connect-the-dots discretisation with every
    numerical error added on the safe side; Doroshenko et al. 2022), so it is never below
    the truth; :meth:`get_epsilon_bounds` also gives a certified lower bound.  A history
    with a step of ``z = 0`` is not private: ``inf``.
    """

    @classmethod
    def mechanism(cls) -> str:
        return "dpfast_pld"

    def _epsilon(self, delta: float, history: tuple[tuple[float, float, int], ...]) -> float:
        acct = self._compose(PldAccountant(), history)
        if acct is None:
            return math.inf
        return float(acct.get_epsilon(delta))

    def get_epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` certified bounds on the exact epsilon at ``delta``."""
        d = float(delta)
        if not (0 < d < 1):
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        history = tuple((float(z), float(q), int(t)) for z, q, t in self.history)
        acct = self._compose(PldAccountant(), history)
        if acct is None:
            return math.inf, math.inf
        lo, up = acct.get_epsilon_bounds(d)
        return float(lo), float(up)


class DpfastRdpAccountant(_DpfastAccountant):
    """Opacus accountant on dpfast's :class:`~dpfast.accounting.RdpAccountant`.

    Use as ``PrivacyEngine(accountant="dpfast_rdp")`` while installed.

    Privacy
    -------
    The same events as :class:`DpfastPldAccountant`; the exact RDP curve of the
    Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019) at dpfast's default orders
    composed and converted with CKS20 Proposition 12, every step rounded up: an upper
    bound on epsilon (looser than the PLD accountant's, faster).
    """

    @classmethod
    def mechanism(cls) -> str:
        return "dpfast_rdp"

    def _epsilon(self, delta: float, history: tuple[tuple[float, float, int], ...]) -> float:
        acct = self._compose(RdpAccountant(), history)
        if acct is None:
            return math.inf
        return float(acct.get_epsilon(delta))


#: mechanism name -> accountant class, registered with Opacus by ``install()``
REGISTRY: dict[str, type[IAccountant]] = {
    DpfastPldAccountant.mechanism(): DpfastPldAccountant,
    DpfastRdpAccountant.mechanism(): DpfastRdpAccountant,
}
