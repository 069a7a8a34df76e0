"""Integer arithmetic shared by MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.

Products of 8-bit values summed over any realistic reduction length are integers far below
2**53, so float64 BLAS computes them exactly and much faster than numpy's integer matmul.
"""

from __future__ import annotations

import numpy as np


def centered(x: np.ndarray, zero_point: np.ndarray | None, axis_len_match: int | None = None,
             axis: int = 0) -> np.ndarray:
    """``x - zero_point`` as float64 (exact); a 1-D zero point of length ``axis_len_match`` applies along ``axis``."""
    xf = x.astype(np.float64)
    if zero_point is None:
        return xf
    zp = np.asarray(zero_point).astype(np.float64)
    if zp.ndim == 1 and zp.size > 1 and axis_len_match is not None:
        shape = [1] * x.ndim
        shape[axis] = zp.size
        zp = zp.reshape(shape)
    return xf - zp


def exact_int32(values: np.ndarray) -> np.ndarray:
    """Exact float64 integer results back to int32."""
    return np.rint(values).astype(np.int32)


def requantize(acc: np.ndarray, multiplier: np.ndarray, zero_point: np.ndarray | None,
               out_dtype: np.dtype) -> np.ndarray:
    """round(acc * multiplier) + zero_point, saturated to ``out_dtype`` (round half to even, in float32)."""
    scaled = acc.astype(np.float32) * np.asarray(multiplier, dtype=np.float32)
    y = np.rint(scaled)
    if zero_point is not None:
        y = y + np.asarray(zero_point).astype(np.float32)
    info = np.iinfo(out_dtype)
    return np.clip(y, info.min, info.max).astype(out_dtype)
