"""Quantize / dequantize helpers of the com.microsoft QLinear ops (per-tensor scales and zero points,
uint8 or int8 as onnxruntime's CPU kernels take them). Quantization rounds half to even in float32
and saturates, as MLAS does; unary ops go through a 256-entry table of every code, as onnxruntime's
QLinearLookupTable kernels do, so each result is that of its own code."""

from __future__ import annotations

from typing import Callable

import numpy as np

from onnxplug.contrib_rules import dequantize, per_tensor

_RANGES = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def quantize(values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """saturate(round_half_even(values / scale) + zero_point) in ``dtype``."""
    lo, hi = _RANGES[np.dtype(dtype)]
    q = np.rint(values.astype(np.float32) / np.float32(scale))
    if zero_point is not None:
        q += np.float32(zero_point)
    return np.clip(q, lo, hi).astype(dtype)


def check_type(kernel, x: np.ndarray) -> np.dtype:
    if x.dtype not in _RANGES:
        raise ValueError(f"{kernel.node.describe()}: quantized input must be uint8 or int8, got {x.dtype}")
    return x.dtype


def through_table(kernel, x: np.ndarray, x_scale, x_zero_point, y_scale, y_zero_point,
                  fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """quantize(fn(dequantize(x))) by a table over every code of x's type."""
    dtype = check_type(kernel, x)
    x_scale, x_zero_point = per_tensor(kernel, "X_scale", x_scale), per_tensor(kernel, "X_zero_point", x_zero_point)
    y_scale, y_zero_point = per_tensor(kernel, "Y_scale", y_scale), per_tensor(kernel, "Y_zero_point", y_zero_point)
    lo, hi = _RANGES[dtype]
    codes = np.arange(lo, hi + 1).astype(dtype)
    table = quantize(fn(dequantize(codes, x_scale, x_zero_point)), y_scale, y_zero_point, dtype)
    return table[x.astype(np.int64) - lo]
