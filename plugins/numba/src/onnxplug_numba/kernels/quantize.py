"""Compiled linear quantization over an (outer, channels, inner) view of the input.

A per-tensor scale and zero point are one channel; a per-axis one has a channel per slice along
the axis. The arithmetic is the numpy provider's, step by step in the same types: float32 quotient
``x / scale``, round half to even, add the zero point, clip, convert; ``(x - zero_point) * scale``
with an exact difference. So results are bitwise those of the numpy kernels (and onnxruntime's).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, error_model="numpy", cache=True)
def quantize(x, scale, zero_point, lo, hi, y):  # type: ignore[no-untyped-def]
    """``y[o, c, i] = clip(rint(x[o, c, i] / scale[c]) + zero_point[c], lo, hi)``; NaN gives ``lo``."""
    outer, channels, inner = x.shape
    for o in range(outer):
        for c in range(channels):
            s = scale[c]
            zp = np.float32(zero_point[c])
            for i in range(inner):
                q = np.rint(np.float32(x[o, c, i] / s)) + zp
                # NaN fails both tests and lands on lo: the cast of a NaN is undefined
                if not q >= lo:
                    q = lo
                elif q > hi:
                    q = hi
                y[o, c, i] = q


@njit(nogil=True, error_model="numpy", cache=True)
def dequantize(x, scale, zero_point, y):  # type: ignore[no-untyped-def]
    """``y[o, c, i] = (x[o, c, i] - zero_point[c]) * scale[c]`` as onnxruntime computes it: the
    difference in integers (exact for 8-bit input; int32 wraps as in C), rounded to float32, then
    the float32 product."""
    outer, channels, inner = x.shape
    for o in range(outer):
        for c in range(channels):
            s = scale[c]
            zp = np.int64(zero_point[c])
            for i in range(inner):
                y[o, c, i] = np.float32(np.float32(np.int32(np.int64(x[o, c, i]) - zp)) * s)


@njit(nogil=True, error_model="numpy", cache=True)
def dynamic_quantize(x, y):  # type: ignore[no-untyped-def]
    """uint8 quantization of flat ``x`` over [min(0, x), max(0, x)] into ``y``; returns
    ``(scale, zero_point)`` computed in float32 as the numpy provider does (scale 1 for all zeros)."""
    n = x.size
    hi = np.float32(0.0)
    lo = np.float32(0.0)
    for i in range(n):
        v = x[i]
        if v > hi:
            hi = v
        if v < lo:
            lo = v
    scale = (hi - lo) / np.float32(255.0) if hi != lo else np.float32(1.0)
    zp = np.float32(0.0) - lo / scale
    zp = np.rint(min(max(zp, np.float32(0.0)), np.float32(255.0)))
    for i in range(n):
        q = np.rint(np.float32(x[i] / scale)) + zp
        if not q >= 0:
            q = np.float32(0.0)
        elif q > 255:
            q = np.float32(255.0)
        y[i] = q
    return scale, zp
