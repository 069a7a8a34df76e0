"""Shared by QuantizeLinear and DequantizeLinear: broadcasting of scales and zero points
(per-tensor, per-axis, blocked), and the target type ranges."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnxplug.ir.types import numpy_dtype

#: Integer quantized types and their ranges, by numpy dtype name.
INTEGER_RANGES = {
    "uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
    "uint4": (0, 15), "int4": (-8, 7), "uint2": (0, 3), "int2": (-2, 1),
}
_RANGE_OF: dict[np.dtype, tuple[int, int] | None] = {}


def integer_range(dtype: np.dtype) -> tuple[int, int] | None:
    """``INTEGER_RANGES`` by dtype, None for other types; kept per dtype (``dtype.name`` is
    computed in Python on every read)."""
    found = _RANGE_OF.get(dtype, False)
    if found is False:
        found = _RANGE_OF[dtype] = INTEGER_RANGES.get(dtype.name)
    return found


#: Float8 types whose overflow ``saturate=1`` clips to +-max (others have no inf to overflow to).
SATURABLE_FLOAT8 = frozenset({"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"})


def broadcast_param(value: np.ndarray, shape: tuple[int, ...], axis: int, block_size: int) -> np.ndarray:
    """A scale or zero point shaped to broadcast against an input of ``shape``.

    Scalars (0-d or one element) apply to the whole tensor; a 1-D value of ``shape[axis]``
    elements applies per slice along ``axis``; with ``block_size`` the value has the input's rank
    and each element covers ``block_size`` consecutive positions along ``axis``.
    """
    value = np.asarray(value)
    if value.ndim == 0 or (value.size == 1 and not block_size):
        return value.reshape(())
    axis = axis % len(shape)
    if block_size:
        if value.ndim != len(shape):
            raise ValueError(f"blocked quantization needs a scale of rank {len(shape)}, got shape {list(value.shape)}")
        expected = -(-shape[axis] // block_size)
        if value.shape[axis] != expected:
            raise ValueError(f"blocked quantization: scale has {value.shape[axis]} blocks along axis {axis}, "
                             f"expected ceil({shape[axis]} / {block_size}) = {expected}")
        return np.repeat(value, block_size, axis=axis).take(np.arange(shape[axis]), axis=axis)
    if value.ndim != 1 or value.size != shape[axis]:
        raise ValueError(f"per-axis scale must be 1-D with {shape[axis]} elements (axis {axis}), "
                         f"got shape {list(value.shape)}")
    dims = [1] * len(shape)
    dims[axis] = value.size
    return value.reshape(dims)


def widened(x: np.ndarray) -> np.ndarray:
    """``x`` as float32, or float64 when it is float64 (exact for every quantized type)."""
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32)


def output_dtype(zero_point: np.ndarray | None, output_dtype_attr: int) -> np.dtype:
    """The quantized type: the zero point's, else the ``output_dtype`` attribute's, else uint8."""
    if zero_point is not None:
        return np.asarray(zero_point).dtype
    if output_dtype_attr:
        return numpy_dtype(output_dtype_attr)
    return np.dtype(np.uint8)


def saturate_float(values: np.ndarray, target: np.dtype) -> np.ndarray:
    """Clip to the finite range of a float8 type (NaN stays NaN), then round to it."""
    info = ml_dtypes.finfo(target)
    return np.clip(values, float(info.min), float(info.max)).astype(target)
