"""Types the Dask releases share: what a worker derives its bounding sub-key from
(:data:`WorkerSource`); a budget argument is a :class:`dpfast.tables.spec.Charger`."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import numpy.typing as npt

from dpfast.dask.keys import WorkerKey

if TYPE_CHECKING:
    pass

__all__ = ["WorkerSource"]


#: the bounding sub-key words, or ``(WorkerKey, release id)`` a worker resolves
WorkerSource: TypeAlias = "npt.NDArray[np.uint64] | tuple[WorkerKey, int]"
