"""Scalar helpers the generated elementwise kernels call; numba inlines them into each kernel.

They take and return one element. ``t`` arguments are zero values of the result type, so a
helper returns the caller's dtype instead of numba's promoted float64.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from onnxplug_sdk.elementwise import GELU_CUBIC, GELU_SQRT_2_OVER_PI, GELU_SQRT_HALF

from onnxplug_numba.kernels.fastmath import erf32, tanh32

_SQRT_HALF = GELU_SQRT_HALF
_SQRT_2_OVER_PI = GELU_SQRT_2_OVER_PI
_CUBIC = GELU_CUBIC


@njit(inline="always", cache=True)
def op_max(a, b):  # type: ignore[no-untyped-def]
    """max that propagates NaN from either side, as numpy.maximum."""
    return a if (a >= b or a != a) else b


@njit(inline="always", cache=True)
def op_min(a, b):  # type: ignore[no-untyped-def]
    """min that propagates NaN from either side, as numpy.minimum."""
    return a if (a <= b or a != a) else b


@njit(inline="always", cache=True)
def op_relu(a, zero):  # type: ignore[no-untyped-def]
    return a if a > zero else zero


@njit(inline="always", cache=True)
def op_sigmoid(a, one):  # type: ignore[no-untyped-def]
    # exp of a negative argument only: no overflow for large |a|
    if a >= 0:
        return one / (one + np.exp(-a))
    e = np.exp(a)
    return e / (one + e)


@njit(inline="always", cache=True)
def op_softplus(a, one):  # type: ignore[no-untyped-def]
    if a > 0:
        return a + np.log1p(np.exp(-a))
    return np.log1p(np.exp(a))


@njit(inline="always", cache=True)
def op_hard_sigmoid(a, alpha, beta, zero, one):  # type: ignore[no-untyped-def]
    v = alpha * a + beta
    return zero if v < zero else (one if v > one else v)


@njit(inline="always", cache=True)
def op_gelu(a):  # type: ignore[no-untyped-def]
    x = float(a)
    return 0.5 * x * (1.0 + math.erf(x * _SQRT_HALF))


@njit(inline="always", cache=True)
def op_gelu_tanh(a):  # type: ignore[no-untyped-def]
    x = float(a)
    return 0.5 * x * (1.0 + math.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * x * x * x)))


@njit(inline="always", cache=True)
def op_round_even(a):  # type: ignore[no-untyped-def]
    """Round half to even, as onnx Round and numpy.rint."""
    r = np.floor(a + 0.5)
    if r - a == 0.5 and r - 2.0 * np.floor(r * 0.5) != 0.0:
        r -= 1.0
    return r


@njit(inline="always", cache=True)
def op_quantize(x, scale, zero_point, lo, hi):  # type: ignore[no-untyped-def]
    """``clip(rint(x / scale) + zero_point, lo, hi)`` as a float32 integer value, the quotient
    rounded to float32 first (as QuantizeLinear); NaN gives ``lo``, as onnxruntime."""
    q = np.rint(np.float32(x / scale)) + np.float32(zero_point)
    if not q >= lo:
        return lo
    if q > hi:
        return hi
    return q


@njit(inline="always", cache=True)
def op_sign(a, zero, one):  # type: ignore[no-untyped-def]
    if a > zero:
        return one
    if a < zero:
        return -one
    return a  # zero, or NaN


@njit(inline="always", cache=True)
def op_mod_python(a, b):  # type: ignore[no-untyped-def]
    """Integer remainder with the divisor's sign (onnx Mod, fmod=0)."""
    return a % b


@njit(inline="always", cache=True)
def op_mod_c(a, b):  # type: ignore[no-untyped-def]
    """Integer remainder with the dividend's sign (C fmod, onnx Mod fmod=1)."""
    r = a % b
    if r != 0 and ((r < 0) != (a < 0)):
        r -= b
    return r


@njit(inline="always", cache=True)
def op_div_trunc(a, b):  # type: ignore[no-untyped-def]
    """Integer quotient rounded toward zero (C++ division, onnx Div on integers)."""
    q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q += 1
    return q


@njit(inline="always", cache=True)
def op_mod_float(a, b):  # type: ignore[no-untyped-def]
    """Float remainder with the divisor's sign (onnx Mod, fmod=0), as numpy.mod."""
    r = np.fmod(a, b)
    if b == 0:
        return r
    if r != 0:
        if (b < 0) != (r < 0):
            r += b
    else:
        r = np.copysign(r * 0, b)
    return r


@njit(inline="always", cache=True)
def op_gelu32(a):  # type: ignore[no-untyped-def]
    """Gelu of a float32 with the vectorisable erf."""
    return np.float32(0.5) * a * (np.float32(1.0) + erf32(a * np.float32(_SQRT_HALF)))


@njit(inline="always", cache=True)
def op_gelu_tanh32(a):  # type: ignore[no-untyped-def]
    inner = np.float32(_SQRT_2_OVER_PI) * (a + np.float32(_CUBIC) * a * a * a)
    return np.float32(0.5) * a * (np.float32(1.0) + tanh32(inner))
