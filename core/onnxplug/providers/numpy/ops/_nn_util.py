"""Small helpers shared by the neural-network kernels (dtype handling, axes)."""

from __future__ import annotations

import functools
import math

import numpy as np

from onnxplug.providers.numpy.ops._base import ARRAY_OUT, NumpyKernel

_NATIVE_FLOAT_KINDS = frozenset("fc")
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BLAS_FLOAT_SET = frozenset(_BLAS_FLOATS)  # a hashed lookup: no dtype comparisons
#: dtypes computed as they are, by both compute_dtype and blas_dtype (a set lookup is the fast path).
_NATIVE_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                                 np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                                                 np.complex64, np.complex128))


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype to compute in: float32 for ml_dtypes types (bfloat16, float8), else the dtype itself."""
    dtype = np.dtype(dtype)
    if dtype.kind in _NATIVE_FLOAT_KINDS or dtype.kind in "iub":
        return dtype
    return np.dtype(np.float32)


@functools.lru_cache(maxsize=64)
def ones_vector(length: int, dtype: np.dtype) -> np.ndarray:
    """A read-only vector of ``length`` ones: ``rows.dot(ones_vector(...))`` sums the rows of a
    float32/float64 matrix as one BLAS matrix-vector product, much faster than
    ``np.add.reduce(rows, axis=1)`` on short rows."""
    ones = np.ones(length, dtype=dtype)
    ones.setflags(write=False)
    return ones


def trailing_sums(x: np.ndarray, axes: tuple[int, ...] | None, keepdims: bool) -> np.ndarray | None:
    """The sum of a C-contiguous float32/float64 ``x`` over ``axes`` when they are its last axes (not
    all of them), as one BLAS product of its rows with a vector of ones; None otherwise, for the
    caller's numpy reduction."""
    if not axes or x.dtype not in _BLAS_FLOAT_SET or not x.size or not x.flags.c_contiguous:
        return None
    rank = x.ndim
    if len(axes) == 1 and (axes[0] == rank - 1 or axes[0] == -1):  # the common case: the last axis
        if rank < 2:
            return None
        shape = x.shape
        kept, width = shape[:-1], shape[-1]
        total = x.reshape(-1, width).dot(ones_vector(width, x.dtype))
        return total.reshape(kept + (1,) if keepdims else kept)
    ordered = sorted(a % rank if -rank <= a < rank else rank for a in axes)
    first = rank - len(ordered)
    if first < 1 or ordered != list(range(first, rank)):
        return None
    kept, width = x.shape[:first], math.prod(x.shape[first:])
    total = x.reshape(-1, width).dot(ones_vector(width, x.dtype))
    return total.reshape(kept + (1,) * len(ordered) if keepdims else kept)


def fast_mean(x: np.ndarray, axes: tuple[int, ...] | None, keepdims: bool) -> np.ndarray:
    """``np.mean(x, axes, keepdims)``; for float32/float64, its own steps (a sum, then one division)
    without its Python overhead, the sum by ``trailing_sums`` where it applies; arrays even when 0-d
    (``ARRAY_OUT``)."""
    total = trailing_sums(x, axes, keepdims)
    if total is None:
        if not (x.size and x.dtype.kind == "f" and x.dtype.itemsize >= 4):
            return np.mean(x, axis=axes, keepdims=keepdims)
        total = np.add.reduce(x, axis=axes, keepdims=keepdims, out=ARRAY_OUT)
    return np.true_divide(total, x.size // max(total.size, 1), out=ARRAY_OUT)


def blas_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype for matmul-like accumulation: float16 and ml_dtypes floats accumulate in float32."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize >= 4 or dtype.kind in "iubc":
        return dtype
    return np.dtype(np.float32)


def widen(x: np.ndarray) -> np.ndarray:
    """``x`` in its compute dtype (a no-op for float16/32/64 and integers)."""
    dt = compute_dtype(x.dtype)
    return x if dt == x.dtype else x.astype(dt)


def norm_axis(axis: int, rank: int) -> int:
    """A non-negative axis, checked against ``rank``."""
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of range for a rank-{rank} tensor")
    return axis % rank if rank else 0


class FloatUnaryKernel(NumpyKernel):
    """Base of elementwise float activations: compute ``op`` in the compute dtype, keep x's dtype."""

    def compute(self, x: np.ndarray) -> np.ndarray:
        dtype = x.dtype
        if not x.ndim:  # ops write in place with out=, which a 0-d input's numpy-scalar temporaries refuse
            return self.compute(x.reshape(1)).reshape(())
        y = self.op(x if dtype in _NATIVE_DTYPES else widen(x))
        return y if y.__class__ is np.ndarray and y.dtype is dtype else np.asarray(y, dtype=dtype)

    def op(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class AxisSoftmaxKernel(NumpyKernel):
    """Softmax-like ops: before opset 13 the input is coerced to 2-D at ``axis`` (default 1) and
    the op runs over the flattened trailing part; from 13 it runs along ``axis`` (default -1)."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.coerced = node.opset < 13
        self.axis = int(self.attr("axis", 1 if self.coerced else -1))

    def compute(self, x: np.ndarray) -> np.ndarray:
        dtype = x.dtype
        xw = x if dtype in _NATIVE_DTYPES else widen(x)
        if self.coerced:
            axis = norm_axis(self.axis, max(x.ndim, 1))
            lead = int(np.prod(x.shape[:axis]))
            y = self.op(xw.reshape(lead, -1), 1).reshape(x.shape)
        else:
            axis = self.axis
            y = self.op(xw, x.ndim - 1 if axis == -1 and x.ndim else norm_axis(axis, max(x.ndim, 1)))
        return y if y.__class__ is np.ndarray and y.dtype is dtype else np.asarray(y, dtype=dtype)

    def op(self, x: np.ndarray, axis: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(x - max) / sum along ``axis``, with one temporary; float32/float64 rows along the last
    axis are summed by ``trailing_sums``. An all -inf row gives NaN, as onnxruntime does (the
    executor runs kernels with numpy's floating-point warnings off)."""
    # the ufuncs' reductions are what np.max and np.sum call, without their Python wrappers
    y = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    np.exp(y, out=y)
    sums = trailing_sums(y, (axis,), True)
    y /= np.add.reduce(y, axis=axis, keepdims=True) if sums is None else sums
    return y


def normalize(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((x - mean) * inv_std, mean, inv_std) over ``axes`` (keepdims), population variance."""
    mean = fast_mean(x, axes, True)
    y = x - mean
    var = fast_mean(np.square(y), axes, True)
    inv_std = 1.0 / np.sqrt(var + x.dtype.type(eps))
    y *= inv_std
    return y, mean, inv_std


def stash_dtype(x: np.ndarray, stash_type: int) -> np.dtype:
    """The dtype LayerNorm/GroupNorm/RMSNorm compute in: float32 for stash_type 1 unless x is float64."""
    if stash_type == 1 and np.dtype(x.dtype) != np.float64:
        return np.dtype(np.float32)
    return compute_dtype(x.dtype)
