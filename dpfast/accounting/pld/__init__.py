"""Privacy-loss-distribution accounting: :class:`PldAccountant`.

Modules: :mod:`._curves` (loss distributions of the supported mechanisms),
:mod:`._pmf` (discretisation, FFT composition, queries), :mod:`.accountant`
(the accountant and its grid choice), :mod:`.dpsgd` (DP-SGD epsilon and calibration).
"""

from __future__ import annotations

from .accountant import MAX_BINS, PldAccountant, UnsupportedEventError

__all__ = ["MAX_BINS", "PldAccountant", "UnsupportedEventError"]
