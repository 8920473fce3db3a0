"""Report step: the release object, its confidence intervals and its accuracy summary."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dpfast.accounting import events as _events
from dpfast.tables import (
    _intervals,  # noqa: F401  (registers the variance interval's state)
    _select,
)
from dpfast.tables import metrics as _metrics
from dpfast.tables import state as _state
from dpfast.tables._law import NoiseLaw as NoiseLaw  # the public home stays this module
from dpfast.tables._law import _alpha as _alpha

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from dpfast.accounting.events import DpEvent
    from dpfast.tables._select import Selection

__all__ = ["TableRelease", "AccuracySummary", "NoiseLaw"]


@dataclasses.dataclass(frozen=True)
class AccuracySummary:
    """Accuracy of a release: from its noise law and, given the truth, measured.

    ``expected_*`` come from the noise law alone (no sensitive data needed); ``mae``,
    ``rmse``, ``relative_error``, ``coverage`` and ``utility_ratio`` are measured against
    the true (bounded or raw) table when one was given, otherwise None.  Values of keys
    that were not published (partition selection) are not included.

    ``utility_ratio`` is a signal-to-noise ratio: the root mean square of the true values
    divided by the RMSE of the released ones (:func:`dpfast.metrics.utility_ratio`).  10
    means the typical error is a tenth of the typical value; below 1 the noise dominates.
    ``ci_halfwidth`` is the half-width of the ``1 - alpha`` interval, in the values' units.
    """

    n_keys: int
    alpha: float
    expected_mae: float
    expected_rmse: float
    ci_halfwidth: float
    mae: float | None = None
    rmse: float | None = None
    relative_error: float | None = None
    coverage: float | None = None
    utility_ratio: float | None = None
    suppressed: int | None = None

    def __str__(self) -> str:
        if math.isnan(self.expected_mae):  # means: no closed form, the CI says it
            law = ""
        else:
            law = (f"mean |error| {self.expected_mae:.4g}, RMSE {self.expected_rmse:.4g}, ")
        lines = [f"{self.n_keys} keys; noise law: {law}{100 * (1 - self.alpha):g}% CI "
                 f"half-width {self.ci_halfwidth:.4g}"]
        if self.mae is not None:
            lines.append(f"measured vs truth: MAE {self.mae:.4g}, RMSE {self.rmse:.4g}, "
                         f"relative error {self.relative_error:.3%}, CI coverage "
                         f"{self.coverage:.1%}, utility ratio {self.utility_ratio:.4g} "
                         "(root-mean-square truth / RMSE: higher is better, < 1 means the "
                         "noise dominates)")
        if self.suppressed is not None:
            lines.append(f"keys in the truth but not published: {self.suppressed}")
        return "\n".join(lines)


class TableRelease:
    """A released table: keys, noisy values, the privacy event and the noise law.

    Attributes
    ----------
    keys : ndarray or tuple of ndarray
        The released keys (one array, or one per key column), aligned with ``values``.
    values : ndarray
        Noisy values: int64 counts / integer sums, float64 float sums and means.
    counts : ndarray
        Alias of ``values`` for a count.
    statistic : str
        ``"count"``, ``"sum"`` or ``"mean"``.
    event : DpEvent
        The privacy event of the whole release (what the budget was charged).
    law : NoiseLaw
        The noise law of each released value (count and sum: exact).
    threshold : int or None
        Key-selection threshold on the noisy number of privacy units per key (None with a
        public domain; for the geometric rule the smallest unit count that is always
        published; for ``"weighted_gaussian"`` on the weighted unit count in units of
        ``2**-16``; see :attr:`selection`).
    selection : Selection or None
        The private key selection (:mod:`dpfast.tables._select`: policy, ε, exact δ, noise
        law or keep probabilities); None with a public domain.
    sensitivity : dict
        The L1 / L2 sensitivities used in the calibration.
    release_id : int or None
        The fresh release id drawn when the release was made with a raw key (a 32-byte key
        or a :class:`dpfast.dask.WorkerKey`): the release's noise is keyed by (key, this
        id), so no two releases with one key share noise.  None when ``rng`` was a
        generator (whose allocator numbered the release).  Not secret.
    """

    def __init__(self, *, keys: np.ndarray | tuple[np.ndarray, ...], values: np.ndarray,
                 statistic: str, event: DpEvent,
                 law: NoiseLaw, threshold: int | None, sensitivity: dict[str, float],
                 key_names: tuple[str, ...] | None = None, value_name: str | None = None,
                 mean_parts: tuple[np.ndarray, np.ndarray, NoiseLaw, NoiseLaw, float, float]
                 | None = None, release_id: int | None = None,
                 selection: Selection | None = None,
                 interval: Callable[[float], tuple[np.ndarray, np.ndarray]] | None = None
                 ) -> None:
        self.keys = keys
        self.values = values
        self.statistic = statistic
        self.event = event
        self.law = law
        self.threshold = threshold
        self.sensitivity = dict(sensitivity)
        self._key_names = key_names
        self._value_name = value_name or statistic
        self._mean_parts = mean_parts
        self.release_id = release_id
        self.selection = selection
        # a statistic with its own conservative intervals (variance, std): alpha -> (lo, hi)
        self._interval = interval

    @property
    def counts(self) -> np.ndarray:
        if self.statistic != "count":
            raise AttributeError(f"a {self.statistic} release has .values, not .counts")
        return self.values

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __iter__(self) -> Iterator[tuple[Hashable, int | float]]:
        """``(key, value)`` pairs, keys in release order (a tuple for several key columns),
        as Python scalars (``for key, value in release: ...``; :meth:`to_dict` gives the
        mapping -- ``dict(release)`` would look for a ``keys()`` method, and ``.keys`` is
        the key array)."""
        values = self.values.tolist()
        return iter(zip(self._key_list(), values))

    def to_dict(self) -> dict[Hashable, int | float]:
        """``{key: value}`` for the released keys (a tuple key for several key columns)."""
        return dict(iter(self))

    def __repr__(self) -> str:
        return (f"TableRelease({self.statistic}, {len(self)} keys, event={self.event}, "
                f"threshold={self.threshold})")

    def _repr_html_(self) -> str:
        """Jupyter's view: the privacy, the accuracy and the first rows."""
        from dpfast.tables import _plot

        return _plot.table_html(self)

    def plot(self, alpha: float = 0.05, *, ax: Axes | None = None) -> Axes:
        """Plot the released values with their ``1 - alpha`` confidence intervals as error
        bars, keys sorted; returns the matplotlib Axes (``ax``, or a new figure's).

        Needs matplotlib (``pip install 'dpfast[plot]'``).  Post-processing of the release
        and of the public noise law: costs no privacy.
        """
        from dpfast.tables import _plot

        return _plot.plot_table(self, alpha=alpha, ax=ax)

    # ------------------------------------------------------------------ intervals
    def confidence_interval(self, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """Per-key ``(low, high)`` covering the bounded true value with probability
        ``>= 1 - alpha`` (over the noise).

        Counts and sums: exact, ``value ± w`` with the smallest ``w`` of the noise law
        (:meth:`NoiseLaw.halfwidth`).  Means: conservative, from the count's and the
        centred sum's intervals at ``alpha / 2`` each (the ratio's extremes over that box,
        clipped to the bounds).  The truth covered is the table after contribution
        bounding.  Under private key selection the keys are chosen by a separate
        measurement (the noisy number of privacy units, independent noise), so the
        coverage also holds conditionally on a key being published.  Variances and
        standard deviations: conservative, see :func:`dpfast.tables.variance`.
        """
        if self._interval is not None:
            return self._interval(alpha)
        if self._mean_parts is None:
            w = self.law.halfwidth(alpha)
            dt = self.values.dtype
            return (self.values - np.asarray(w, dtype=dt), self.values + np.asarray(w, dtype=dt))
        s, n, law_s, law_n, lo, hi = self._mean_parts
        a = _alpha(alpha) / 2
        ws = law_s.halfwidth(float(a))
        wn = law_n.halfwidth(float(a))
        n_lo = np.maximum(n - wn, 1).astype(np.float64)
        n_hi = (n + wn).astype(np.float64)
        s_lo = s - ws
        s_hi = s + ws
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.stack([s_lo / n_lo, s_lo / n_hi, s_hi / n_lo, s_hi / n_hi])
        mid = lo + hi
        low = np.clip((mid + r.min(axis=0)) / 2, lo, hi)
        high = np.clip((mid + r.max(axis=0)) / 2, lo, hi)
        bad = n_hi < 1
        low[bad], high[bad] = lo, hi
        return low, high

    # ------------------------------------------------------------------ accuracy
    def accuracy(self, truth: Mapping[Hashable, float] | pd.Series | npt.ArrayLike = None,
                 *, alpha: float = 0.05,
                 floor: float = 1.0) -> AccuracySummary:
        """Accuracy summary from the noise law and, if ``truth`` is given, measured.

        Parameters
        ----------
        truth : mapping, pandas Series or array, optional
            True values (for evaluation only: this is sensitive data).  A mapping / Series
            from key (a tuple for multi-column keys) to value, or an array aligned with
            :attr:`keys`.  Keys missing from a mapping count as 0.
        alpha : float
            Level of the confidence intervals.
        floor : float
            Floor of the relative error's denominator (:func:`dpfast.metrics.relative_error`).
        """
        law = self.law
        if self._mean_parts is not None or self._interval is not None:
            lo_, hi_ = self.confidence_interval(alpha)
            hw = float(np.mean((hi_ - lo_) / 2)) if len(self) else 0.0
            exp_mae = exp_rmse = float("nan")
        else:
            hw = float(law.halfwidth(alpha))
            exp_mae, exp_rmse = law.mean_abs(), law.std()
        if truth is None:
            return AccuracySummary(len(self), float(alpha), exp_mae, exp_rmse, hw)
        t, suppressed = self._aligned_truth(truth)
        lo, hi = self.confidence_interval(alpha)
        noisy = self.values.astype(np.float64)
        return AccuracySummary(
            len(self), float(alpha), exp_mae, exp_rmse, hw,
            mae=_metrics.mae(noisy, t), rmse=_metrics.rmse(noisy, t),
            relative_error=_metrics.relative_error(noisy, t, floor=floor),
            coverage=_metrics.ci_coverage(lo, hi, t),
            utility_ratio=_metrics.utility_ratio(noisy, t), suppressed=suppressed)

    def _key_list(self) -> list[Hashable]:
        if isinstance(self.keys, tuple):
            return list(zip(*(k.tolist() for k in self.keys)))
        return self.keys.tolist()

    def _aligned_truth(self, truth: Mapping[Hashable, float] | pd.Series | npt.ArrayLike
                       ) -> tuple[np.ndarray, int | None]:
        if hasattr(truth, "items") or hasattr(truth, "index"):
            items = dict(truth.items())
            keys = self._key_list()
            t = np.array([float(items.get(k, 0)) for k in keys])
            published = set(keys)
            suppressed = sum(1 for k, v in items.items() if k not in published and v)
            selected = self.threshold is not None or self.selection is not None
            return t, (suppressed if selected else None)
        arr = np.asarray(truth, dtype=np.float64)
        if arr.shape != self.values.shape:
            raise ValueError(f"truth has shape {arr.shape}, the release has "
                             f"{self.values.shape} values")
        return arr, None

    # ------------------------------------------------------------------ serialisation
    def to_state(self) -> dict[str, object]:
        """The release as JSON-able data (no pickle): keys and values as their exact bytes,
        the event, the noise law, the threshold.  :meth:`from_state` rebuilds an equal
        release (bit for bit); :class:`dpfast.Session`'s result cache stores it.
        (:meth:`to_dict` is the ``{key: value}`` mapping.)"""
        if not isinstance(self.event, _events.DpEvent):
            raise TypeError("only a release whose event is a dpfast event can be serialised")
        mp = self._mean_parts
        return {
            "version": _state.STATE_VERSION,
            "type": "TableRelease",
            "keys": _state.encode_keys(self.keys),
            "multi_key": isinstance(self.keys, tuple),
            "values": _state.encode_array(self.values),
            "statistic": self.statistic,
            "event": self.event.to_dict(),
            "law": _state.encode_law(self.law),
            "threshold": self.threshold,
            "sensitivity": {k: _state.encode_scalar(v) for k, v in self.sensitivity.items()},
            "key_names": None if self._key_names is None else list(self._key_names),
            "value_name": self._value_name,
            "mean_parts": None if mp is None else {
                "sums": _state.encode_array(mp[0]), "counts": _state.encode_array(mp[1]),
                "sum_law": _state.encode_law(mp[2]), "count_law": _state.encode_law(mp[3]),
                "lo": _state.encode_scalar(mp[4]), "hi": _state.encode_scalar(mp[5])},
            "release_id": self.release_id,
            "selection": _select.selection_state(self.selection),
            "interval": _state._interval_state(self._interval),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, object]) -> TableRelease:
        """Rebuild a release from :meth:`to_state` (ValueError for anything else)."""
        st = _state.check_header(state, "TableRelease")
        mp = st["mean_parts"]
        mean_parts = None if mp is None else (
            _state.decode_array(mp["sums"]), _state.decode_array(mp["counts"]),
            _state.decode_law(mp["sum_law"]), _state.decode_law(mp["count_law"]),
            _state.decode_scalar(mp["lo"]), _state.decode_scalar(mp["hi"]))
        names = st["key_names"]
        return cls(
            keys=_state.decode_keys(st["keys"], st["multi_key"]),
            values=_state.decode_array(st["values"]), statistic=st["statistic"],
            event=_events.from_dict(st["event"]), law=_state.decode_law(st["law"]),
            threshold=st["threshold"],
            sensitivity={k: _state.decode_scalar(v) for k, v in st["sensitivity"].items()},
            key_names=None if names is None else tuple(names), value_name=st["value_name"],
            mean_parts=mean_parts, release_id=st["release_id"],
            selection=_select.selection_from_state(st.get("selection")),
            interval=_state._interval_from_state(st.get("interval")))

    # ------------------------------------------------------------------ export
    def to_pandas(self, alpha: float = 0.05) -> pd.DataFrame:
        """A DataFrame indexed by the key, as ``DataFrame.groupby(key).agg(...)`` gives.

        Index: the released keys, named after the key Series (``"key"`` for arrays); a
        :class:`pandas.MultiIndex` for several key columns (``"key0"``, ``"key1"``... for
        arrays).  Columns: the noisy value (``"count"``, ``"sum"`` or ``"mean"``),
        ``ci_low`` and ``ci_high`` (the interval of
        :meth:`confidence_interval` at level ``1 - alpha``).  ``df.reset_index()`` gives
        the flat table of :meth:`to_columns`.

        Needs pandas (``pip install dpfast[pandas]``).
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is in the test extra
            raise ImportError("to_pandas needs pandas: pip install 'dpfast[pandas]'") from exc
        cols = self.to_columns(alpha)
        names = self._names()
        keys = [cols.pop(n) for n in names]
        if len(keys) == 1:
            index = pd.Index(keys[0], name=names[0])
        else:
            index = pd.MultiIndex.from_arrays(keys, names=list(names))
        return pd.DataFrame(cols, index=index)

    def _names(self) -> tuple[str, ...]:
        n = len(self.keys) if isinstance(self.keys, tuple) else 1
        return self._key_names or (("key",) if n == 1 else tuple(f"key{j}" for j in range(n)))

    def to_columns(self, alpha: float = 0.05) -> dict[str, np.ndarray]:
        """The table as ``{column name: array}`` (keys, value, ci_low, ci_high)."""
        cols: dict[str, np.ndarray] = {}
        keys = self.keys if isinstance(self.keys, tuple) else (self.keys,)
        for name, k in zip(self._names(), keys):
            cols[name] = k
        lo, hi = self.confidence_interval(alpha)
        cols[self._value_name] = self.values
        cols["ci_low"] = lo
        cols["ci_high"] = hi
        return cols

