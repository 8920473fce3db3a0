"""Greatest convex minorant of a polyline, by pool-adjacent-violators, in numba.

Private (docs/design.md): numpy/numba only, validates nothing.  Used by the PLD
accountant's optimistic discretisation (``dpfast.accounting.pld._lower``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_U = 2.0**-53


@nb.njit(cache=True)
def convex_minorant_slopes(s: np.ndarray, w: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Slopes of the greatest convex minorant of the polyline with slopes ``s`` on cells
    of widths ``w > 0`` (its isotonic regression: pooled weighted means), each lowered by
    a bound on its rounding error (``4 (k + 2) u max|s|`` over its block of ``k`` cells),
    so the returned polyline (from the same start) lies below the input one."""
    n = s.size
    val = np.empty(n)
    wt = np.empty(n)
    big = np.empty(n)
    cnt = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        val[k] = s[i]
        wt[k] = w[i]
        big[k] = abs(s[i])
        cnt[k] = 1
        k += 1
        while k > 1 and val[k - 2] > val[k - 1]:
            tw = wt[k - 2] + wt[k - 1]
            val[k - 2] = (val[k - 2] * (wt[k - 2] / tw)) + (val[k - 1] * (wt[k - 1] / tw))
            wt[k - 2] = tw
            big[k - 2] = max(big[k - 2], big[k - 1])
            cnt[k - 2] += cnt[k - 1]
            k -= 1
    out = np.empty(n)
    i = 0
    for b in range(k):
        v = val[b] - 4.0 * (cnt[b] + 2) * _U * big[b]
        for _ in range(cnt[b]):
            out[i] = v
            i += 1
    return out
