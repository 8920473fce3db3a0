"""Types the Dask releases share: what a budget argument must do (:class:`Charger`) and
what a worker derives its bounding sub-key from (:data:`WorkerSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from dpfast.dask.keys import WorkerKey

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent

__all__ = ["Charger", "WorkerSource"]


class Charger(Protocol):
    """A budget a release charges (:class:`dpfast.Budget`, or anything charging like
    one: :func:`dpfast.tables.spec.check_charger` checks it has ``spend``)."""

    def spend(self, event: DpEvent, *, note: str = "") -> object:
        """Check that ``event`` fits and charge it (raise when it does not)."""


#: the bounding sub-key words, or ``(WorkerKey, release id)`` a worker resolves
WorkerSource: TypeAlias = "npt.NDArray[np.uint64] | tuple[WorkerKey, int]"
