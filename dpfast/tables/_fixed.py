"""Aggregate step for float values: exact fixed-point sums (Casacuberta et al., CCS 2022).

A float64 sum accumulated in data-dependent order can move by more than the clamp bound
when one person is added: every addition rounds, and the roundings depend on the other
rows.  Here a float value is never added as a float:

1. The clamped value ``v`` is rounded once to the fixed-point grid ``q = 2**e``
   (``u = rint(v / q)``, ties to even; ``v / q`` is exact, a power-of-two scaling), then
   clamped again to ``[ceil(lo / q), floor(hi / q)]`` units, so ``|u q| <= max(|lo|, |hi|)``
   exactly.  A mean's summand is the centred ``2u - ceil(lo / q) - floor(hi / q)``, of
   magnitude at most ``(hi - lo) / q``.
2. The units are summed exactly in integers: per (privacy id, key) in int64 (at most
   ``max_per_partition`` summands, at most ``2**61 / max_per_partition`` each by the choice
   of ``e``), per key in two int64 words (``hi 2**32 + lo``).  A value is at most
   ``2**53`` units (centred ``2**54``), so the fewer than ``2**40`` rows a release takes
   total below ``2**94``: no input can overflow (the ``OverflowError`` beyond ``2**94``
   units is a guard that no release reaches, never a wrap).  Integer addition is
   associative, so the total does not depend on the row order, the thread count or how a
   cluster partitions the rows.
3. The exact total ``S q`` is rounded once to the output grid ``g`` of the noise (``g`` a
   power of two, ``q = g 2**-GUARD_BITS`` unless the bounds need a coarser ``q``), ties to
   even, and noised there (:mod:`dpfast.tables.keynoise`).

So adding or removing one person changes a key's exact total by at most ``c B`` (``B`` the
clamp bound in ``q`` units, never more), and its grid value by at most ``c B + g``: the
sensitivity the float grid mechanisms state (``max_changed = k`` grid steps).  ``q`` depends
only on the bounds, ``max_per_partition`` and ``g`` (public), never on the data.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from dpfast._kernels import fixed as _kt
from dpfast.tables._keys import SERIAL_ROWS

__all__ = ["GUARD_BITS", "Fixed", "FixedSums", "fixed_grid", "to_units", "grid_steps",
           "saturated"]

GUARD_BITS = 10  # q = g / 2**10: the fixed-point grid is 1024 times finer than the output
_ROW_BITS = 61  # c summands of one (id, key) sum to at most 2**61 in int64
_UNIT_BITS = 53  # one clamped value is at most 2**53 units (see fixed_grid)
SATURATION = 1 << 62  # integer totals noised in int64 are saturated at +-2**62
_OVERFLOW = ("a float sum exceeds 2**94 fixed-point units (two int64 words); use smaller "
             "bounds or fewer rows per key")


def _ceil_log2(x: Fraction) -> int:
    """Smallest ``e`` with ``x <= 2**e`` (``x > 0``)."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e < x:
        e += 1
    while Fraction(2) ** (e - 1) >= x:
        e -= 1
    return e


@dataclasses.dataclass(frozen=True)
class Fixed:
    """The fixed-point grid ``q = 2**exp`` of one release's float summands: units clamped
    to ``[lo_units, hi_units]``, centred (``2u - lo_units - hi_units``) for a mean."""

    exp: int
    lo_units: int
    hi_units: int
    centre: bool

    @property
    def bound(self) -> int:
        """Largest ``|summand|`` in units: ``max(|lo_units|, |hi_units|)``, or
        ``hi_units - lo_units`` centred."""
        if self.centre:
            return self.hi_units - self.lo_units
        return max(abs(self.lo_units), abs(self.hi_units))


def fixed_grid(lo: float, hi: float, g: float, c: int, centre: bool) -> Fixed:
    """The fixed-point grid for values clamped to ``[lo, hi]``, noised on the grid ``g``
    (a power of two), at most ``c`` rows per (id, key); ``centre`` for a mean."""
    flo, fhi = Fraction(lo), Fraction(hi)
    mag = max(abs(flo), abs(fhi))
    eg = math.frexp(g)[1] - 1  # g = 2**eg
    e = eg - GUARD_BITS
    if mag > 0:
        # a value at most 2**53 units (centred: 2**54), so 2**40 rows (the most a release
        # takes, tables._inputs.MAX_ROWS) total below 2**94: no data can overflow
        e = max(e, _ceil_log2(mag) - _UNIT_BITS)
        per = 2 * mag if centre else mag  # summand magnitude (centred: at most 2 mag)
        e = max(e, _ceil_log2(per * c) - _ROW_BITS)  # c summands: at most 2**61
    e = max(e, -1074)
    q = Fraction(2) ** e
    lo_u = math.ceil(flo / q)
    hi_u = math.floor(fhi / q)
    if lo_u > hi_u:  # no grid point in [lo, hi] (tiny, so 0 is outside): the one next to
        # it on zero's side, so |u q| <= max(|lo|, |hi|) still holds
        lo_u = hi_u = math.floor(fhi / q) if fhi > 0 else math.ceil(flo / q)
    return Fixed(e, int(lo_u), int(hi_u), centre)


def to_units(fx: Fixed, vals: np.ndarray) -> np.ndarray:
    """int64 summands of clamped float values (see the module docstring)."""
    out = np.empty(vals.shape[0], np.int64)
    if vals.shape[0]:
        v = np.ascontiguousarray(vals, np.float64)
        up = -fx.exp  # scale by 2**up, in two doubles when 2**up overflows one
        s1 = math.ldexp(1.0, min(up, 1023))
        s2 = math.ldexp(1.0, up - min(up, 1023))
        kernel = _kt.to_units_serial if v.shape[0] < SERIAL_ROWS else _kt.to_units
        kernel(v, s1, s2, np.int64(fx.lo_units), np.int64(fx.hi_units), bool(fx.centre), out)
    return out


@dataclasses.dataclass(frozen=True)
class FixedSums:
    """Exact per-key totals in units of ``2**exp``: ``hi * 2**32 + lo`` (``lo`` in
    ``[0, 2**32)``)."""

    hi: np.ndarray
    lo: np.ndarray
    exp: int

    @classmethod
    def zeros(cls, n: int, exp: int) -> FixedSums:
        return cls(np.zeros(n, np.int64), np.zeros(n, np.int64), exp)

    def __getitem__(self, idx: int | slice | np.ndarray) -> FixedSums:
        return FixedSums(self.hi[idx], self.lo[idx], self.exp)

    def __len__(self) -> int:
        return int(self.hi.shape[0])

    def exact(self, i: int) -> Fraction:
        """Total ``i`` as an exact rational."""
        return Fraction((int(self.hi[i]) << 32) + int(self.lo[i])) * Fraction(2) ** self.exp

    def to_float(self) -> np.ndarray:
        """The totals rounded to float64 (for inspection; not what is noised)."""
        return np.array([float(self.exact(i)) for i in range(len(self))], np.float64)

    def add_rows(self, codes: np.ndarray, units: np.ndarray) -> None:
        """``self[codes[i]] += units[i]`` exactly (OverflowError beyond 2**94 units)."""
        if codes.shape[0] and _kt.accumulate_rows2(codes, units, self.hi, self.lo):
            raise OverflowError(_OVERFLOW)

    def add_kept(self, off: np.ndarray, nkeep: np.ndarray, gkeys: np.ndarray,
                 gval: np.ndarray) -> None:
        """Add each kept (id, key) pair's int64 sum to its key (see
        :func:`dpfast._kernels.grouping.accumulate`)."""
        if _kt.accumulate2(off, nkeep, gkeys, gval, self.hi, self.lo):
            raise OverflowError(_OVERFLOW)

    def add_partials(self, codes: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> None:
        """Add partial totals (e.g. one per cluster partition and key) exactly."""
        if codes.shape[0] and _kt.add_two_word(codes, np.ascontiguousarray(hi, np.int64),
                                               np.ascontiguousarray(lo, np.int64),
                                               self.hi, self.lo):
            raise OverflowError(_OVERFLOW)


def saturated(sums: FixedSums) -> np.ndarray:
    """The exact integer totals (``exp == 0``) as int64, saturated at ``±2**62``.

    Saturation is 1-Lipschitz (``|sat(a) - sat(b)| <= |a - b|``), so a person still moves
    a saturated total by at most the sensitivity; it only applies to totals beyond
    ``2**62``, where int64 has no room left for the noise.  It is what lets an integer
    release take any data within its public bounds without an overflow that would depend
    on the rows."""
    assert sums.exp == 0, "saturated() takes integer totals"
    hi, lo = sums.hi, sums.lo
    lim = np.int64(1 << 30)
    small = np.abs(hi) <= lim  # hi 2**32 + lo fits int64 (|total| <= 2**62 + 2**32)
    out = np.where(small, hi, 0) * np.int64(1 << 32) + np.where(small, lo, 0)
    out = np.clip(out, -SATURATION, SATURATION)
    out[~small] = np.where(hi[~small] > 0, SATURATION, -SATURATION)
    return out.astype(np.int64, copy=False)


def grid_steps(sums: FixedSums, g: float) -> tuple[np.ndarray, dict[int, int]]:
    """Each total rounded once to the grid ``g`` (a power of two), ties to even, as a
    number of grid steps: int64 where it fits below 2**62, else (``big``) a Python int."""
    n = len(sums)
    j = (math.frexp(g)[1] - 1) - sums.exp  # total * 2**exp / g = total * 2**-j
    r = np.zeros(n, np.int64)
    flag = np.zeros(n, np.bool_)
    if n:
        _kt.round_units(sums.hi, sums.lo, np.int64(j), r, flag)
    big: dict[int, int] = {}
    for i in np.flatnonzero(flag).tolist():
        s = (int(sums.hi[i]) << 32) + int(sums.lo[i])
        if j <= 0:
            v = s << -j
        else:
            f, rem = divmod(s, 1 << j)  # floor division: rem in [0, 2**j)
            half = 1 << (j - 1)
            v = f + (1 if rem > half or (rem == half and f & 1) else 0)
        if -(1 << 62) < v < 1 << 62:
            r[i] = v
        else:
            big[i] = v
    return r, big
