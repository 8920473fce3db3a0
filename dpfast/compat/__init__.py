"""Drop-in fast backends for other differential-privacy libraries.

* :mod:`dpfast.compat.diffprivlib` -- IBM diffprivlib's mechanisms (same names,
  constructors and behaviour, subclasses of diffprivlib's own classes) drawing from dpfast's
  exact samplers, and ``install()`` / ``uninstall()`` / ``patched()`` to make diffprivlib's
  tools and models use them.
* :mod:`dpfast.compat.pipeline_dp` -- ``install()`` / ``uninstall()`` / ``patched()`` that
  route PipelineDP's noise additions, thresholding noise and exponential mechanism through
  dpfast.
* :mod:`dpfast.compat.opacus` -- ``install()`` / ``uninstall()`` / ``patched()`` that make
  Opacus (PyTorch DP-SGD) draw its noise (exact grid Gaussian, written into the parameters'
  tensors) and its Poisson batches from dpfast, also under ``secure_mode`` without
  torchcsprng, plus Opacus accountants on dpfast's PLD and RDP accountants
  (``pip install 'dpfast[torch]'``).

The optional packages are imported only when these submodules are imported (``pip install
'dpfast[compat]'``); ``import dpfast`` never imports them.  This is the top layer: it uses
dpfast's public facade only.
"""

from __future__ import annotations

__all__ = ["diffprivlib", "opacus", "pipeline_dp"]
