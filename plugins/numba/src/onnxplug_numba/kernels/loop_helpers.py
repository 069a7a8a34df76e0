"""Compiled pieces a generated Loop body calls (see ``fusion.loop_codegen``): float32 products on
numpy's OpenBLAS, the float32 tanh, exp and sigmoid of ``kernels.fastmath`` (tanh and sigmoid as
onnxruntime computes them), a checked Gather, the growth of scan-output buffers and a condition's
truth.

Errors raise with a fixed message; the Loop kernel then reruns the call on the generic path, whose
error names the body node at fault.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels.fastmath import exp32, sigmoid32, tanh32
from onnxplug_numba.kernels.native_parallel import sgemm_strided

_NO_TRANS, _TRANS = 111, 112


@njit(cache=True, nogil=True)
def gemm(a, b, trans_a, trans_b, alpha):  # type: ignore[no-untyped-def]
    """alpha * A' @ B' of 2-D float32 arrays (A' = A.T when ``trans_a``...)."""
    if trans_a:
        a = a.T
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    m, k = a.shape
    if trans_b:
        n, k2 = b.shape
    else:
        k2, n = b.shape
    if k != k2:
        raise ValueError("matrix product: the inner dimensions differ")
    c = np.empty((m, n), np.float32)
    if m == 0 or n == 0:
        return c
    if k == 0:
        c[:] = 0
        return c
    sgemm_strided(_TRANS if trans_b else _NO_TRANS, m, n, k, alpha, a.ctypes.data, a.shape[1],
                  b.ctypes.data, b.shape[1], 0.0, c.ctypes.data, n)
    return c


@njit(cache=True, nogil=True)
def matmul_2d(a, b):  # type: ignore[no-untyped-def]
    """ONNX MatMul of two 2-D float32 arrays."""
    return gemm(a, b, False, False, 1.0)


@njit(cache=True, nogil=True)
def matmul_1d_2d(a, b):  # type: ignore[no-untyped-def]
    """ONNX MatMul of a vector and a matrix: a vector."""
    return gemm(a.reshape((1, a.shape[0])), b, False, False, 1.0)[0]


@njit(cache=True, nogil=True)
def matmul_2d_1d(a, b):  # type: ignore[no-untyped-def]
    """ONNX MatMul of a matrix and a vector: a vector."""
    return gemm(a, b.reshape((1, b.shape[0])), False, True, 1.0)[:, 0].copy()


@njit(cache=True, nogil=True)
def matmul_1d_1d(a, b):  # type: ignore[no-untyped-def]
    """ONNX MatMul of two vectors: their dot product (a 0-d value)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError("matrix product: the inner dimensions differ")
    total = np.float32(0)
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@njit(cache=True, nogil=True)
def gather_first(x, index):  # type: ignore[no-untyped-def]
    """Gather(x, index, axis=0) for a scalar index, negative ones counting from the end."""
    n = x.shape[0]
    if index < -n or index >= n:
        raise IndexError("Gather: index out of range")
    if index < 0:
        index += n
    return x[index]


@njit(cache=True, nogil=True)
def truth(value):  # type: ignore[no-untyped-def]
    """A condition of one element as a bool."""
    flat = np.asarray(value).ravel()
    if flat.size != 1:
        raise ValueError("Loop: the condition must have one element")
    return bool(flat[0])


@njit(cache=True, nogil=True)
def single(value):  # type: ignore[no-untyped-def]
    """The element of an array of one element (Squeeze to 0-d)."""
    flat = np.ascontiguousarray(value).reshape(value.size)
    if flat.size != 1:
        raise ValueError("Squeeze: a squeezed axis is not of size 1")
    return flat[0]


@njit(cache=True, nogil=True)
def grown(buffer, used, limit):  # type: ignore[no-untyped-def]
    """``buffer``'s first ``used`` rows in a buffer of twice as many rows (at most ``limit``)."""
    rows = min(limit, max(2 * buffer.shape[0], 1))
    bigger = np.empty((rows,) + buffer.shape[1:], buffer.dtype)
    bigger[:used] = buffer[:used]
    return bigger


@njit(cache=True, nogil=True)
def _contiguous_flat(x):  # type: ignore[no-untyped-def]
    """x as a C-ordered copy's (or itself's) flat view, and a new array of its shape."""
    c = np.ascontiguousarray(x)
    return c.reshape(c.size), np.empty(c.shape, np.float32)


@njit(cache=True, nogil=True)
def tanh_array(x):  # type: ignore[no-untyped-def]
    """tanh of a float32 array with the vectorisable ``fastmath.tanh32`` (libm's is per element)."""
    src, out = _contiguous_flat(x)
    dst = out.reshape(out.size)
    for i in range(src.size):
        dst[i] = tanh32(src[i])
    return out


@njit(cache=True, nogil=True)
def exp_array(x):  # type: ignore[no-untyped-def]
    """exp of a float32 array with ``fastmath.exp32``."""
    src, out = _contiguous_flat(x)
    dst = out.reshape(out.size)
    for i in range(src.size):
        dst[i] = exp32(src[i])
    return out


@njit(cache=True, nogil=True)
def sigmoid_array(x):  # type: ignore[no-untyped-def]
    """The logistic sigmoid of a float32 array with ``fastmath.sigmoid32``."""
    src, out = _contiguous_flat(x)
    dst = out.reshape(out.size)
    for i in range(src.size):
        dst[i] = sigmoid32(src[i])
    return out
