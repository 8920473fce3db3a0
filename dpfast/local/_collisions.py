"""Error of a count-mean sketch's estimate for its *fixed* hash functions.

The sketches' :meth:`variance` formulas average over random hash functions.  A server
has one set of (public) hash functions, and for them an item's estimate carries a fixed
collision error: the mass of the other items that share its cells, less the average
``(n - n_d) / m`` the estimator subtracts.  An interval with the random-hash variance
misses the items that collide with a heavy item (and, when collisions dominate the
noise, the items that collide with none).  This module estimates the mean squared error
of each candidate's estimate for the fixed hash functions, from the released sketch and
the candidates' own estimates only (post-processing of the private reports).

Derivation (``a = m / (m - 1)``, row values ``R_j = M[j, h_j(d)]``, the estimate
``a (mean_j R_j - n / m)``).  Over the clients' randomness with the hash functions fixed,
``E R_j = n_d + C_j(d)`` with ``C_j(d)`` the true mass of the other items in cell
``h_j(d)`` of row ``j``, so the estimate's bias is ``B_d = a (mean_j C_j(d) - (n - n_d)
/ m)`` and its mean squared error ``Var_d + B_d^2``.  Split the other items into the
candidates ``D`` (known hashes) and the rest (mass ``R = n - sum_D n_v``):

* candidates: ``C_j^D(d) = sum over v in D, v != d, h_j(v) = h_j(d) of n_v``, estimated
  with the clipped estimates ``c_v = clip(n_hat_v, 0, n)``; the plug-in bias
  ``B_hat_d = a (mean_j C_j^D(d) - (sum_(D - d) c_v) / m)`` enters squared;
* the rest, over random hash functions (they are independent of the data) as distinct
  items: variance ``a^2 R (1 - 1/m) / (k m)``;
* the clients' noise ``Var_d``: CMS ``a^2 (n (c^2 - 1)/4 + sum_v n_v bbar_v (1 - bbar_v))``
  with ``bbar_v`` the share of rows where ``v`` shares ``d``'s cell, bounded by
  ``a^2 (n (c^2 - 1)/4 + mean_j C_j^D(d) + R / m)``; HCMS ``a^2 (n c^2 - n_d - sum_v
  n_v bbar_v^2)``, bounded by ``a^2 (n c^2 - c_d)``;
* heavy items missing from the candidates: the rows are ``k`` replicates (independent hash
  functions), so the sample variance ``s_d^2`` of ``R_j - C_j^D(d)`` over the rows,
  ``W_d = a^2 s_d^2 / k``, estimates the remaining collision spread plus a known noise
  part ``Q_d`` (CMS: ``a^2 (n (c^2 - 1)/4 + n_d + S_d (k - 2) / (k - 1))``, HCMS:
  ``a^2 (n c^2 - S_d / (k - 1))``, ``S_d = (n - n_d) / m``, from the clients' randomness:
  ``E sum_j (e_j - ebar)^2 = sum_j Var e_j - k Var ebar``).  With ``V_d = Q_d + a^2 R
  (1 - 1/m) / (k m)`` (what ``W_d`` estimates when nothing is missing), the excess
  ``W_d - V_d`` is added when it is significant: ``W_d > V_d chi2_(0.99, k-1) / (k - 1)``
  (``(k - 1) W_d / V_d`` is about chi-square with ``k - 1`` degrees of freedom when
  nothing is missing); none with one row.  Without the test, the noise of ``W_d`` (``k -
  1`` degrees of freedom) would widen every interval of a sketch with few rows.

The sum is a conservative estimate of the mean squared error (the bias enters squared,
its plug-in adds the candidates' noise, the noise terms are upper bounds);
``counts -/+ z sqrt(MSE)`` covers the true count at about the nominal rate or above when
every item that may be heavy is a candidate, and well above it where collisions dominate
the noise (the squared bias of an item is then its error, and ``z > 1``).  A heavy
item left out of the candidates is seen only through the row spread (a rare collision
may show in no row), so pass every item that may be heavy as a candidate.
"""

from __future__ import annotations

import numpy as np

_TEST_LEVEL = 0.99  # the rows' excess spread counts when significant at this level


_BLOCK = 1 << 15  # candidates per block: bounds the (block, k) temporaries


def row_values(matrix: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Mean over the rows of ``M[j, h_j(d)]`` per candidate (in blocks)."""
    k = matrix.shape[0]
    out = np.empty(cols.shape[0])
    for a in range(0, cols.shape[0], _BLOCK):
        out[a:a + _BLOCK] = matrix[np.arange(k)[None, :], cols[a:a + _BLOCK]].mean(axis=1)
    return out


def sketch_mse(matrix: np.ndarray, cols: np.ndarray, fp: np.ndarray, counts: np.ndarray,
               n: int, noise: float, hadamard: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(noise_part, collision_part)`` of the fixed-hash mean squared errors.

    ``matrix (k, m)``: the sketch matrix; ``cols (d, k)``: the candidates' cells;
    ``fp (d,)``: their fingerprints (duplicates count once); ``counts``: the estimates;
    ``noise``: CMS ``(c^2 - 1) / 4``, HCMS ``c^2``.  The noise part grows as ``n``, the
    collision part as ``n^2`` at fixed item fractions.
    """
    k, m = matrix.shape
    d = cols.shape[0]
    a2 = (m / (m - 1)) ** 2
    ch = np.clip(counts, 0, n)
    _, first, inv = np.unique(fp, return_index=True, return_inverse=True)
    cu = ch[first]
    col_mass = np.zeros((k, m))
    for j in range(k):
        col_mass[j] = np.bincount(cols[first, j], weights=cu, minlength=m)
    own = cu[inv.reshape(-1)]
    total_d = float(cu.sum())
    rest = max(0.0, n - total_d)
    rest_var = a2 * rest * (1 - 1 / m) / (k * m)
    cut = 0.0
    if k > 1:
        from scipy import stats

        cut = float(stats.chi2.ppf(_TEST_LEVEL, k - 1)) / (k - 1)
    var = np.empty(d)
    collision = np.empty(d)
    rows = np.arange(k)[None, :]
    for a in range(0, d, _BLOCK):
        b = slice(a, a + _BLOCK)
        c = cols[b]
        coll = np.maximum(col_mass[rows, c] - own[b, None], 0.0)  # candidate mass in cell
        cbar = coll.mean(axis=1)
        bias = (m / (m - 1)) * (cbar - (total_d - own[b]) / m)
        s_other = (n - ch[b]) / m
        with np.errstate(over="ignore", invalid="ignore"):
            if hadamard:
                v = a2 * (n * noise - ch[b])
                q = a2 * (n * noise - s_other / max(k - 1, 1))
            else:
                v = a2 * (n * noise + cbar + rest / m)
                q = a2 * (n * noise + ch[b] + s_other * (k - 2) / max(k - 1, 1))
            extra: float | np.ndarray = 0.0
            if k > 1:
                w = a2 * np.var(matrix[rows, c] - coll, axis=1, ddof=1) / k
                excess = np.nan_to_num(w - q - rest_var, nan=0.0, posinf=0.0)
                extra = np.where(w > cut * (q + rest_var), np.maximum(excess, 0.0), 0.0)
            collision[b] = bias * bias + rest_var + extra
            var[b] = np.where(np.isfinite(v), np.maximum(v, 0.0), np.inf)
    return var, collision
