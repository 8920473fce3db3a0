"""Report step of a quantile release: the released grid points and their rank accuracy."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpfast.accounting import events as _events
from dpfast.tables import _quantile_em as _em
from dpfast.tables import _select
from dpfast.tables import state as _state

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["QuantileRelease"]


@dataclasses.dataclass(frozen=True, eq=False)
class QuantileRelease:
    """A released table of per-key quantiles (:func:`dpfast.tables.quantile`).

    Attributes
    ----------
    keys : ndarray or tuple of ndarray
        The released keys (a domain's order, or canonical order after selection).
    values : ndarray
        One grid point per key (``(n_keys, len(q))`` for several quantiles); float64, or
        int64 for integer values.
    q : tuple of float
        The quantiles.
    grid : ndarray
        The public candidate grid.
    epsilon_per_key : float
        ε of each (key, quantile) exponential mechanism.
    sensitivity : int
        Rows one person may keep per key (``c``); the utility's sensitivity is ``S c``
        (:func:`dpfast.tables._quantile_em.scale`: ``S = max(num, den - num)`` for
        ``q = num / den`` with ``den <= 2**16``, else 1).
    max_partitions : int
        Keys one person may touch (``k``).
    event : DpEvent
        The privacy event of the whole release (add/remove one person).
    threshold : int or None
        The selection threshold on the noisy number of people per key (``domain=None``
        with a thresholding rule; None for the geometric rule or a public domain).
    selection : Selection or None
        The private key selection (``domain=None``; :mod:`dpfast.tables._select`).
    rank_utility : str
        The rank utility the values were drawn with: ``"scaled"`` (the scaled utility of
        :mod:`dpfast.tables._quantile_em`, this version) or ``"floor"`` (Smith's
        ``-dist(floor(q n), [a, b])`` for every ``q``: a state saved by an older version).
    """

    keys: np.ndarray | tuple[np.ndarray, ...]
    values: np.ndarray
    q: tuple[float, ...]
    grid: np.ndarray
    epsilon_per_key: float
    sensitivity: int
    max_partitions: int
    event: _events.DpEvent
    threshold: int | None = None
    selection: _select.Selection | None = None
    key_names: tuple[str, ...] | None = None
    release_id: int | None = None
    rank_utility: str = "scaled"

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def to_state(self) -> dict[str, object]:
        """The release as JSON-able data (no pickle; :meth:`from_state` rebuilds it bit for
        bit): what :class:`dpfast.Session`'s result cache stores."""
        keys = self.keys
        return {"version": _state.STATE_VERSION, "type": "QuantileRelease",
                "keys": _state.encode_keys(keys), "multi_key": isinstance(keys, tuple),
                "values": _state.encode_array(self.values),
                "q": [_state.encode_scalar(float(x)) for x in self.q],
                "grid": _state.encode_array(self.grid),
                "epsilon_per_key": _state.encode_scalar(float(self.epsilon_per_key)),
                "sensitivity": int(self.sensitivity),
                "max_partitions": int(self.max_partitions),
                "event": self.event.to_dict(), "threshold": self.threshold,
                "selection": _select.selection_state(self.selection),
                "key_names": None if self.key_names is None else list(self.key_names),
                "release_id": self.release_id, "rank_utility": self.rank_utility}

    @classmethod
    def from_state(cls, state: Mapping[str, object]) -> QuantileRelease:
        """Rebuild a release from :meth:`to_state` (ValueError for anything else)."""
        st = _state.check_header(state, "QuantileRelease")
        names = st["key_names"]
        return cls(
            keys=_state.decode_keys(st["keys"], st["multi_key"]),
            values=_state.decode_array(st["values"]),
            q=tuple(_state.decode_scalar(x) for x in st["q"]),
            grid=_state.decode_array(st["grid"]),
            epsilon_per_key=_state.decode_scalar(st["epsilon_per_key"]),
            sensitivity=st["sensitivity"], max_partitions=st["max_partitions"],
            event=_events.from_dict(st["event"]), threshold=st["threshold"],
            selection=_select.selection_from_state(st["selection"]),
            key_names=None if names is None else tuple(names),
            release_id=st["release_id"],
            # a state without it was drawn by an older version: Smith's utility for every q
            rank_utility=_rank_utility(st.get("rank_utility", "floor")))

    def _scaled(self, q: float) -> float | None:
        return q if self.rank_utility == "scaled" else None

    def rank_error(self, alpha: float = 0.05, q: float | None = None) -> int:
        """Rank error ``r`` at level ``1 - alpha``, per key, of quantile ``q`` (default:
        the largest over the release's quantiles).

        With probability at least ``1 - alpha`` the released grid point ``g`` satisfies
        ``dist(t, [a(g), b(g)]) <= d* + r``, where ``t`` is the target rank of the key's
        ``n`` kept rows -- ``q n`` exactly when ``q = num / den`` with ``den <= 2**16``
        (0, 1/2, 1/4, 3/4...), else ``floor(q n)`` -- ``a(g)`` / ``b(g)`` the numbers of
        kept rows ``< g`` / ``<= g``, and ``d*`` the same distance for the best grid point
        (0 when the grid is fine enough to hold a point of rank ``t``).  ``r`` is the
        smallest integer with ``m exp(-ε_q D r / (2 S c)) <= alpha`` (McSherry & Talwar
        2007, Thm 6: every worse candidate together has at most that probability), ``m``
        the grid size, ``D`` the utility's units per rank and ``S c`` its sensitivity
        (:func:`dpfast.tables._quantile_em.scale`: ``D / S = 2`` for the median, 1 for the
        minimum and maximum).  It depends on public parameters only.
        """
        qs = self.q if q is None else (float(q),)
        if q is not None and float(q) not in self.q:
            raise ValueError(f"q must be one of the release's quantiles {self.q}, got {q!r}")
        return int(np.max([_em.rank_error(self.epsilon_per_key, self.sensitivity,
                                          self.grid.shape[0], alpha, self._scaled(x))
                           for x in qs]))

    def accuracy(self, alpha: float = 0.05) -> dict[str, float | int | str]:
        """The accuracy statement at level ``1 - alpha``: ``{"alpha", "rank_error",
        "grid_step", "statement"}`` (``rank_error``: the largest over the quantiles;
        ``grid_step``: the largest gap of the grid, the value resolution)."""
        r = self.rank_error(alpha)
        step = float(np.max(np.diff(self.grid))) if self.grid.shape[0] > 1 else 0.0
        exact = self.rank_utility == "scaled" and all(
            Fraction(x).denominator <= _em.MAX_DEN for x in self.q)
        target = "q n" if exact else "floor(q n)"
        text = (f"with probability >= {1 - alpha:g}, per key and quantile, the released "
                f"value's rank is within +/-{r} rows of {target} (beyond the grid's own "
                f"resolution, step {step:g})")
        return {"alpha": float(alpha), "rank_error": r, "grid_step": step, "statement": text}

    def _repr_html_(self) -> str:
        """Jupyter's view: the privacy spent, the rank-error statement and the rows."""
        from dpfast.tables import _plot

        return _plot.quantile_html(self)

    def _names(self) -> tuple[str, ...]:
        n = len(self.keys) if isinstance(self.keys, tuple) else 1
        return self.key_names or (("key",) if n == 1 else tuple(f"key{j}" for j in range(n)))

    def to_columns(self) -> dict[str, np.ndarray]:
        """``{key column: array, ..., value column: array}``; one column per quantile
        (``"q0.5"``...), or ``"median"`` / ``"min"`` / ``"max"`` / ``"quantile"`` for one."""
        keys = self.keys if isinstance(self.keys, tuple) else (self.keys,)
        out = {n: np.asarray(k) for n, k in zip(self._names(), keys)}
        vals = self.values.reshape(self.values.shape[0], -1)
        if len(self.q) == 1:
            name = {0.5: "median", 0.0: "min", 1.0: "max"}.get(self.q[0], "quantile")
            out[name] = vals[:, 0]
        else:
            for j, qq in enumerate(self.q):
                out[f"q{qq:g}"] = vals[:, j]
        return out

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame indexed by the key (a MultiIndex for several key columns).  Needs
        pandas."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is in the test extra
            raise ImportError("to_pandas needs pandas: pip install 'dpfast[pandas]'") from exc
        cols = self.to_columns()
        names = self._names()
        keys = [cols.pop(n) for n in names]
        index = (pd.Index(keys[0], name=names[0]) if len(keys) == 1
                 else pd.MultiIndex.from_arrays(keys, names=list(names)))
        return pd.DataFrame(cols, index=index)


def _rank_utility(x: object) -> str:
    if x not in ("scaled", "floor"):
        raise ValueError(f"unsupported rank utility {x!r} in a QuantileRelease state")
    return str(x)
