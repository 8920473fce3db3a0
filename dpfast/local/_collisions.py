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


def sketch_mse(vals: np.ndarray, cols: np.ndarray, fp: np.ndarray, counts: np.ndarray,
               n: int, m: int, noise: float, hadamard: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(noise_part, collision_part)`` of the fixed-hash mean squared errors.

    ``vals (d, k)``: the row values ``M[j, h_j(d)]``; ``cols (d, k)``: the cells;
    ``fp (d,)``: the candidates' fingerprints (duplicates count once); ``counts``: the
    estimates; ``noise``: CMS ``(c^2 - 1) / 4``, HCMS ``c^2``.  The noise part grows as
    ``n``, the collision part as ``n^2`` at fixed item fractions.
    """
    d, k = vals.shape
    a2 = (m / (m - 1)) ** 2
    ch = np.clip(counts, 0, n)
    _, first, inv = np.unique(fp, return_index=True, return_inverse=True)
    cu = ch[first]
    ucols = cols[first]
    rows = np.arange(k)
    col_mass = np.zeros((k, m))
    for j in range(k):
        col_mass[j] = np.bincount(ucols[:, j], weights=cu, minlength=m)
    own = cu[inv.reshape(-1)]
    coll = col_mass[rows[None, :], cols] - own[:, None]  # (d, k) candidate mass in the cell
    coll = np.maximum(coll, 0.0)
    cbar = coll.mean(axis=1)
    total_d = float(cu.sum())
    rest = max(0.0, n - total_d)
    bias = (m / (m - 1)) * (cbar - (total_d - own) / m)
    rest_var = a2 * rest * (1 - 1 / m) / (k * m)
    s_other = (n - ch) / m
    with np.errstate(over="ignore", invalid="ignore"):
        if hadamard:
            var = a2 * (n * noise - ch)
            q = a2 * (n * noise - s_other / max(k - 1, 1))
        else:
            var = a2 * (n * noise + cbar + rest / m)
            q = a2 * (n * noise + ch + s_other * (k - 2) / max(k - 1, 1))
        extra = np.zeros(d)
        if k > 1:
            w = a2 * np.var(vals - coll, axis=1, ddof=1) / k
            from scipy import stats

            cut = float(stats.chi2.ppf(_TEST_LEVEL, k - 1)) / (k - 1)
            excess = np.nan_to_num(w - q - rest_var, nan=0.0, posinf=0.0)
            extra = np.where(w > cut * (q + rest_var), np.maximum(excess, 0.0), 0.0)
        collision = bias * bias + rest_var + extra
        var = np.where(np.isfinite(var), np.maximum(var, 0.0), np.inf)
    return var, collision
