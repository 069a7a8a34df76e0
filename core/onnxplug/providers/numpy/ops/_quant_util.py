"""Integer arithmetic shared by MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.

Products of 8-bit values summed over any realistic reduction length are integers far below
2**53, so float64 BLAS computes them exactly and much faster than numpy's integer matmul.
"""

from __future__ import annotations

import numpy as np


def centered(x: np.ndarray, zero_point: np.ndarray | None, axis_len_match: int | None = None,
             axis: int = 0, dtype: type = np.float64) -> np.ndarray:
    """``x - zero_point`` as float64 (exact; or ``dtype``); a 1-D zero point of length ``axis_len_match``
    applies along ``axis``."""
    xf = x.astype(dtype)
    if zero_point is None:
        return xf
    zp = np.asarray(zero_point).astype(dtype)
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
    y = np.asarray(acc.astype(np.float32, copy=False) * np.asarray(multiplier, dtype=np.float32))
    np.rint(y, out=y)  # y is a new array: the steps run in place
    if zero_point is not None:
        y += np.asarray(zero_point).astype(np.float32)
    lo, hi = _bounds(out_dtype)
    np.maximum(y, lo, out=y)
    np.minimum(y, hi, out=y)
    return y.astype(out_dtype)


_BOUNDS: dict[np.dtype, tuple[np.float32, np.float32]] = {}


def _bounds(dtype: np.dtype) -> tuple[np.float32, np.float32]:
    """An integer type's range as float32 bounds, kept per type."""
    found = _BOUNDS.get(dtype)
    if found is None:
        info = np.iinfo(dtype)
        found = _BOUNDS[np.dtype(dtype)] = (np.float32(info.min), np.float32(info.max))
    return found


#: Integers up to 2**24 in magnitude are exact in float32 (its significand has 24 bits).
FLOAT32_EXACT = float(1 << 24)


def centered_range(dtype: np.dtype, zero_point: np.ndarray | None) -> float:
    """The largest ``|x - zero_point|`` an integer ``x`` of ``dtype`` can give (infinite for other types)."""
    bounds = _INTEGER_BOUNDS.get(dtype)
    if bounds is None:
        if dtype.kind not in "iu":
            return float("inf")
        info = np.iinfo(dtype)  # slow to make: kept per type
        bounds = _INTEGER_BOUNDS[dtype] = (int(info.min), int(info.max))
    lo, hi = bounds
    if zero_point is None:
        return float(max(-lo, hi))
    zp = np.asarray(zero_point)
    if zp.size == 1:
        zp_min = zp_max = int(zp.item())
    else:
        zp_min, zp_max = int(zp.min()), int(zp.max())
    return float(max(hi - zp_min, zp_max - lo))


_INTEGER_BOUNDS: dict[np.dtype, tuple[int, int]] = {}


class IntegerConvWeights:
    """A quantized convolution's weights ``w - w_zero_point`` (per output channel or per tensor) and
    int32 bias, prepared for the float convolution engines, and kept across calls when W, its zero
    point and B are constant initializers (a session passes the same arrays every run).

    ``get`` gives them in float32 when every partial sum the convolution can form is exact there:
    each output channel's sum of ``|w - w_zero_point|`` times the largest ``|x - x_zero_point|``,
    plus its ``|bias|``, stays below 2**24 (a bound on every partial sum in any order, also of the
    int32 sum onnxruntime converts to float). Otherwise float64 (exact while below 2**53).
    """

    def __init__(self, constant: bool) -> None:
        self.constant = constant
        self._kept: tuple | None = None

    def _prepare(self, w: np.ndarray, zero_point: np.ndarray | None, b: np.ndarray | None) -> tuple:
        w64 = centered(w, zero_point, w.shape[0], 0)
        b64 = None if b is None else np.asarray(b).astype(np.float64)
        reach = np.abs(w64).reshape(w.shape[0], -1).sum(axis=1)
        bias = np.zeros(w.shape[0]) if b64 is None else np.abs(b64).reshape(-1)
        prepared = (w64, b64, w64.astype(np.float32), None if b64 is None else b64.astype(np.float32), reach, bias)
        if self.constant:
            self._kept = (w, zero_point, b, prepared)  # one assignment: threads see the old or the new entry
        return prepared

    def get(self, w: np.ndarray, zero_point: np.ndarray | None, b: np.ndarray | None,
            x_range: float) -> tuple[np.ndarray, np.ndarray | None]:
        """(weights, bias) as float32 when exact for inputs within ``x_range`` of their zero point,
        else as float64."""
        kept = self._kept
        if kept is not None and kept[0] is w and kept[1] is zero_point and kept[2] is b:
            prepared = kept[3]
        else:
            prepared = self._prepare(w, zero_point, b)
        w64, b64, w32, b32, reach, bias = prepared
        if float(np.max(reach * x_range + bias, initial=0.0)) < FLOAT32_EXACT:
            return w32, b32
        return w64, b64


class IntegerMatrix:
    """The right operand ``B - b_zero_point`` of an integer product ``(A - a_zero_point) @ B'``,
    kept across calls when B and its zero point are constant initializers, as IntegerConvWeights:
    float32 when every partial sum is exact there (each column's sum of ``|B - b_zero_point|``
    times the largest ``|A - a_zero_point|``, plus the largest ``|addend|`` of an int32 term added
    to the product, below 2**24), else float64."""

    def __init__(self, constant: bool) -> None:
        self.constant = constant
        self._kept: tuple | None = None

    def get(self, b: np.ndarray, zero_point: np.ndarray | None, a_range: float,
            addend: np.ndarray | None = None, transpose: bool = False) -> np.ndarray:
        """B (or B^T, with ``transpose``; a 1-D zero point is per column of it) centered, in float32
        when exact for left operands within ``a_range`` of their zero point, else float64."""
        kept = self._kept
        # callers may pass the zero point reshaped (a new array each call): equal values match too
        if kept is not None and kept[0] is b and (kept[1] is zero_point or (
                kept[1] is not None and zero_point is not None and np.array_equal(kept[1], zero_point))):
            b64, b32, reach = kept[2]
        else:
            b64 = centered(b.T if transpose else b, zero_point)
            reach = float(np.abs(b64).sum(axis=-2 if b64.ndim > 1 else 0).max(initial=0.0))
            b32 = b64.astype(np.float32)
            if self.constant:
                self._kept = (b, zero_point, (b64, b32, reach))
        extra = 0.0 if addend is None or addend.size == 0 else float(np.abs(addend).max())
        return b32 if reach * a_range + extra < FLOAT32_EXACT else b64


def integer_product(a: np.ndarray, a_zero_point: np.ndarray | None, b: np.ndarray, b_zero_point: np.ndarray | None,
                    prepared: IntegerMatrix | None, product=np.matmul, row_axis: int | None = None,
                    addend: np.ndarray | None = None) -> np.ndarray:
    """``(a - a_zero_point) @ (b - b_zero_point)``, exact, as float32 or float64 integers (see
    IntegerMatrix; ``prepared`` None: float64, B centered on the call). A 1-D a_zero_point applies
    along ``row_axis`` of a."""
    if prepared is None:
        bf = centered(b, b_zero_point)
    else:
        bf = prepared.get(b, b_zero_point, centered_range(a.dtype, a_zero_point), addend)
    row_len = None if row_axis is None else a.shape[row_axis]
    return product(centered(a, a_zero_point, row_len, row_axis or 0, bf.dtype), bf)
