"""Secure grid Gaussian noise written into torch tensors (CPU and CUDA).

Two operations, both drawing from a dpfast :class:`~dpfast.Generator` (ChaCha20):

* :func:`noisy_tensor` -- the *fused* path: ``round_g(x) + g Z`` for a gradient tensor ``x``,
  ``Z`` discrete Gaussian with parameter ``sigma / g`` (:func:`dpfast.gaussian`), the exact
  grid value rounded to float64 once and then to the tensor's dtype;
* :func:`noise_tensor` -- the *noise-only* path: ``g Z`` alone (a tensor shaped like a
  reference), for the Opacus code paths that add the noise themselves.

CPU tensors are read and written through ``Tensor.numpy()`` views: for float64 and float32
the sampling kernel reads the gradient's memory and writes the new tensor's memory itself
(no copies; float32 gets the double rounded once more); float16 and bfloat16 go through
one reused float64 scratch buffer per thread.  CUDA tensors are copied to the host, noised
there, converted to their dtype in a reused *pinned* staging buffer and copied back with
``non_blocking=True``; a CUDA event recorded after the copy guards the staging buffer's
next reuse.  bfloat16 (which numpy lacks) is converted by torch.
"""

from __future__ import annotations

import functools
import math
import threading
from fractions import Fraction
from typing import Any

import numpy as np
import torch

import dpfast
from dpfast._core.rounding import ceil_sqrt, float_up, sqrt_up

__all__ = ["SUPPORTED_DTYPES", "fused_sigma", "noisy_tensor", "noise_tensor"]

#: parameter dtypes the noise can be written into
SUPPORTED_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
_NUMPY = {torch.float64: np.float64, torch.float32: np.float32, torch.float16: np.float16}

_LOCAL = threading.local()


def _positive_finite(value: Any, name: str) -> float:
    """A positive finite float from a real number (0-dim tensors included: Opacus's
    adaptive clipping keeps ``max_grad_norm`` as one)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def clip_norm_of(max_grad_norm: Any, per_layer: Any = None) -> float:
    """The L2 sensitivity ``C`` of one example's clipped gradient.

    Flat clipping: ``max_grad_norm``.  Per-layer clipping (Opacus's ``max_grad_norms``, one
    bound ``c_i`` per parameter): ``sqrt(sum c_i^2)`` rounded up (Opacus computes it in
    float32, which can round it down)."""
    if per_layer is None:
        return _positive_finite(max_grad_norm, "max_grad_norm")
    total = sum(Fraction(_positive_finite(c, "max_grad_norm")) ** 2 for c in per_layer)
    return sqrt_up(total)


@functools.lru_cache(maxsize=256)
def fused_sigma(noise_multiplier: float, clip_norm: float, n_params: int) -> tuple[float, float]:
    """Standard deviation and grid of the fused path.

    Returns the smallest float ``sigma >= z (C + ceil(sqrt(d)) g)`` (``z`` the noise
    multiplier, ``C`` the clipping bound, ``d`` the number of noised coordinates) with
    ``g = dpfast.granularity(sigma)``, found as a fixed point: rounding ``d`` coordinates to
    the grid moves the sum by at most ``sqrt(d) g / 2`` in L2 on each side, so the grid
    values of neighbouring inputs are at most ``C + sqrt(d) g`` apart and the effective
    noise multiplier ``sigma / (C + sqrt(d) g)`` is never below ``z``.
    """
    z = Fraction(_positive_finite(noise_multiplier, "noise_multiplier"))
    c = Fraction(_positive_finite(clip_norm, "max_grad_norm"))
    if isinstance(n_params, bool) or not isinstance(n_params, int) or n_params < 1:
        raise ValueError(f"n_params must be a positive integer, got {n_params!r}")
    root = ceil_sqrt(n_params)
    sigma = float_up(z * c)
    for _ in range(200):
        g = dpfast.granularity(sigma)
        need = float_up(z * (c + root * Fraction(g)))
        if need <= sigma:
            return sigma, g
        sigma = need
    raise RuntimeError("fused_sigma: the grid fixed point did not converge")  # pragma: no cover


def _check_tensor(t: Any, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if type(t) not in (torch.Tensor, torch.nn.Parameter):
        raise TypeError(f"{name}: tensor subclass {type(t).__name__} (e.g. a DTensor) is not "
                        "supported by dpfast.compat.opacus; uninstall() to use Opacus's noise")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must have dtype float64, float32, float16 or bfloat16, got "
                        f"{t.dtype}")
    return t.detach()


def _scratch(n: int) -> np.ndarray:
    """A reused float64 work buffer of at least ``n`` cells (one per thread)."""
    buf = getattr(_LOCAL, "scratch", None)
    if buf is None or buf.size < n:
        buf = np.empty(n, np.float64)
        _LOCAL.scratch = buf
    return buf[:n]


def _load(work: np.ndarray, x: torch.Tensor | None) -> None:
    """``work = float64(x)`` (exact: every supported dtype widens exactly); zeros if None."""
    if x is None:
        work.fill(0.0)
    elif x.device.type == "cpu" and x.dtype in _NUMPY:
        np.copyto(work, x.contiguous().numpy().reshape(-1))
    else:
        torch.from_numpy(work).copy_(x.reshape(-1))  # bfloat16, or device -> host


def _store_cpu(out: torch.Tensor, work: np.ndarray) -> None:
    """``out = work`` rounded to ``out``'s dtype (numpy: one correctly rounded conversion;
    bfloat16: torch's conversion)."""
    if out.dtype in _NUMPY:
        np.copyto(out.numpy().reshape(-1), work, casting="unsafe")
    else:
        out.view(-1).copy_(torch.from_numpy(work))


def _noised(x: torch.Tensor | None, like: torch.Tensor, sigma: float, g: float,
            gen: Any) -> torch.Tensor:
    out = torch.empty(like.shape, dtype=like.dtype, device=like.device)
    n = out.numel()
    if n == 0:
        return out
    if out.device.type == "cpu" and out.dtype in (torch.float64, torch.float32):
        # the kernel writes the tensor's memory itself (float32: the double rounded once
        # more), reading x through a view of the same dtype
        dst = out.numpy().reshape(-1)
        if x is None:
            dst.fill(0.0)
            src = dst
        else:
            src = x.contiguous().numpy().reshape(-1)
        dpfast.gaussian(src, sigma, rng=gen, granularity=g, out=dst)
        return out
    work = _scratch(n)
    _load(work, x)
    dpfast.gaussian(work, sigma, rng=gen, granularity=g, out=work)  # in place
    if out.device.type == "cpu":
        _store_cpu(out, work)
    else:
        _store_device(out, work)
    return out


def _store_device(out: torch.Tensor, work: np.ndarray) -> None:
    """Host ``work`` -> device ``out``: convert into a pinned staging buffer of ``out``'s
    dtype, then an asynchronous copy; the staging buffer is reused only after the event
    recorded behind that copy has completed."""
    n = work.size
    staging, event = _staging(out.dtype, n)
    if event is not None:
        event.synchronize()  # the previous copy from this buffer is done
    _store_cpu(staging[:n], work)
    out.view(-1).copy_(staging[:n], non_blocking=True)
    done = torch.cuda.Event()
    done.record(torch.cuda.current_stream(out.device))  # the copy's stream, behind it
    _LOCAL.staging[out.dtype] = (staging, done)


def _staging(dtype: torch.dtype, n: int) -> tuple[torch.Tensor, Any]:
    table = getattr(_LOCAL, "staging", None)
    if table is None:
        table = _LOCAL.staging = {}
    staging, event = table.get(dtype, (None, None))
    if staging is None or staging.numel() < n:
        if event is not None:
            event.synchronize()
        staging, event = torch.empty(n, dtype=dtype, pin_memory=True), None
        table[dtype] = (staging, event)
    return staging, event


def noisy_tensor(x: torch.Tensor, sigma: float, g: float, gen: Any) -> torch.Tensor:
    """A new tensor (``x``'s dtype, shape and device) holding ``round_g(x) + g Z``.

    ``Z`` has the discrete Gaussian law with parameter ``sigma / g``, independently per
    cell; the exact grid value is rounded once to float64 (saturated at the float64
    range) and then to ``x``'s dtype (float16: one correctly rounded conversion from
    float64; bfloat16: torch's conversion) -- both deterministic functions of the exact
    noisy grid value, i.e. post-processing.  ``x`` is not modified.
    """
    return _noised(_check_tensor(x, "x"), x, sigma, g, gen)


def noise_tensor(std: float, reference: torch.Tensor, gen: Any) -> torch.Tensor:
    """A new tensor shaped like ``reference`` holding ``g Z``, ``g = granularity(std)``,
    ``Z`` discrete Gaussian with parameter ``std / g`` (zeros when ``std == 0``)."""
    ref = _check_tensor(reference, "reference")
    s = float(std)
    if s == 0:
        return torch.zeros(ref.shape, dtype=ref.dtype, device=ref.device)
    s = _positive_finite(s, "std")
    return _noised(None, ref, s, dpfast.granularity(s), gen)
