"""Secure noise, exact Poisson sampling and tight accounting for Opacus (PyTorch DP-SGD).

``install()`` / ``uninstall()`` / ``patched()`` / ``is_installed()`` (the shape of the other
backends) make Opacus draw every noise value and every Poisson batch from dpfast's
ChaCha20 CSPRNG, with ``secure_mode=True`` working without torchcsprng; two accountants
(``"dpfast_pld"``, ``"dpfast_rdp"``) implement Opacus's ``IAccountant``::

    import dpfast.compat.opacus as dpo
    from opacus import PrivacyEngine
    dpo.install()
    engine = PrivacyEngine(accountant="dpfast_pld", secure_mode=True)
    model, optimizer, loader = engine.make_private_with_epsilon(..., target_epsilon=3.0,
                                                                target_delta=1e-5, ...)

Install with ``pip install 'dpfast[torch]'``; ``import dpfast`` never imports torch.

What each path guarantees, and how it differs from Opacus's own noise
---------------------------------------------------------------------
Opacus draws ``torch.normal`` noise on torch's generator (Mersenne Twister / Philox: not
cryptographic); its ``secure_mode`` needs torchcsprng (whose last release requires
torch 1.8.1) and then adds four float normals and halves them, still a float Gaussian.

*Fused path* -- ``DPOptimizer.add_noise`` and ``DPOptimizerFastGradientClipping.add_noise``
(hence also ``DPPerLayerOptimizer``, ``DistributedDPOptimizer``,
``SimpleDistributedPerLayerOptimizer`` and ``DistributedDPOptimizerFastGradientClipping``,
which call them): each parameter's gradient becomes ``p.grad = round_g(s) + g Z``, ``s``
the clipped sum Opacus computed, ``Z`` independent discrete Gaussians with parameter
``sigma / g`` (CKS20, exact law from ideal bits), ``g = dpfast.granularity(sigma)`` (a
power of two, about ``sigma / 2**40``) and ``sigma = z (C + ceil(sqrt(d)) g)`` rounded up:
the noise Opacus asks for (``z`` the noise multiplier, ``C`` its ``max_grad_norm``, for
per-layer clipping ``sqrt(sum c_i**2)`` rounded up) plus the grid term, ``d`` the number of
noised parameters. Grid rounding moves the sum by at most ``sqrt(d) g / 2``, so
neighbouring clipped sums (distance ``<= C``) give grid points at most ``C + sqrt(d) g``
apart and the effective noise multiplier ``sigma / (C + sqrt(d) g)`` is at least ``z``:
Opacus's accounting of ``z`` stays valid for the mechanism actually run. The output is the
exact grid value rounded once to float64 and then to the parameter's dtype (float32,
float16, bfloat16; float64 is written directly): a deterministic function of the noisy grid
value, i.e. post-processing, so the guarantee holds for the floats stored -- also in half
precision, where the second rounding (to 11 or 8 significant bits) only loses accuracy: it
is applied to the noisy value, never to the noise or the gradient alone (a half-precision
gradient is read exactly; what it holds is whatever Opacus's clipping and summation in that
dtype produced, see the assumption below). Everything Opacus does afterwards (dividing by
the expected batch size, the optimizer step) is post-processing too. The guarantee assumes
what Opacus's accounting assumes: each example's clipped gradient has L2 norm ``<= C``
(Opacus clips in the parameter dtype with the factor ``min(1, C / (norm + 1e-6))``; its
float rounding is not certified, unlike that of
:func:`dpfast.dpsgd.clip_and_noise <dpfast.mechanisms.dpsgd.clip_and_noise>`). The
optimizer's ``generator`` is not used: the noise comes from the generator of
:func:`install`. Distributed optimizers add the noise on one rank and then sum the ranks'
gradients in floating point (``all_reduce``), as Opacus does: the noise is exact, the
cross-rank sum is not.

*Noise-only path* -- ``_generate_noise`` in every Opacus optimizer module (used by
``AdaClipDPOptimizer`` incl. its noisy unclipped count, ``DistributedPerLayerOptimizer``,
``FSDPOptimizerFastGradientClipping``): the noise tensor is ``g Z`` with
``g = granularity(std)`` and ``Z`` discrete Gaussian with parameter ``std / g`` (exact grid
noise of the standard deviation Opacus asks for), written in the reference's dtype;
Opacus then adds it to the gradient in floating point, so the exact-law and CSPRNG
properties hold for the noise, while the float addition is Opacus's (as for its own
noise).  A tensor subclass as reference (FSDP's ``DTensor``) is refused with a
``TypeError`` (``uninstall()`` to use Opacus's noise there).
``opacus.utils.adaptive_clipping`` draws one ``torch.normal`` of its own and is not
patched.

*Poisson sampling* -- ``UniformWithReplacementSampler`` and
``DistributedUniformWithReplacementSampler`` select each example independently with
probability exactly ``sample_rate`` (the float64 value as a binary rational; 64-bit
ChaCha20 words compared with its expansion, :func:`poisson_mask`) instead of comparing a
float32 ``torch.rand`` with it; the distributed sampler's public split among replicas is
unchanged.  This is the sampling the accountants assume.

*secure_mode* -- ``PrivacyEngine(secure_mode=True)`` works without torchcsprng (with it
installed, Opacus's own constructor runs).  Its ``secure_rng`` is then a ``torch.Generator``
seeded from ``os.urandom``, used only by code dpfast does not replace: the shuffling of a
loader made with ``poisson_sampling=False`` (not the sampling DP-SGD's accounting assumes).

*Devices* -- CPU tensors are read and written through ``Tensor.numpy()`` views (float32
and float64: by the sampling kernel itself, no copy); CUDA
tensors go to the host, are noised there and come back from a pinned staging buffer with
an asynchronous copy.  The generator's streams are counter-based, so results do not
depend on thread counts; with ``install(key=...)`` a run is replayable (whoever holds the
key can remove the noise).  Objects created while installed keep working after
``uninstall()``, with Opacus's own noise and sampling again.

Accountants
-----------
:class:`DpfastPldAccountant` (``"dpfast_pld"``): dpfast's PLD accountant, a certified upper
bound on the exact epsilon, within 0.5% of Opacus's PRV accountant's upper bound (below it
in typical settings) and ~10-20x faster; :class:`DpfastRdpAccountant` (``"dpfast_rdp"``):
dpfast's RDP accountant.  Registered with Opacus while installed (``PrivacyEngine(
accountant=...)`` and ``make_private_with_epsilon``'s calibration).
"""

from __future__ import annotations

from dpfast.compat.opacus._accountant import DpfastPldAccountant, DpfastRdpAccountant
from dpfast.compat.opacus._patch import (
    generator,
    install,
    is_installed,
    patched,
    poisson_mask,
    uninstall,
)

__all__ = ["install", "uninstall", "patched", "is_installed", "generator", "poisson_mask",
           "DpfastPldAccountant", "DpfastRdpAccountant"]
