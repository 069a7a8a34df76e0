"""Vectorisable float32 exp, tanh, sigmoid and erf.

numba calls libm for ``np.exp`` on scalars, which stops LLVM from vectorising a loop. These are
branch-free (selects only) polynomial versions. exp and erf use Cephes' coefficients, accurate to
a few float32 ulps; 2**n is built from its exponent bits by an LLVM bitcast. sigmoid and tanh are
onnxruntime's own (MLAS's rational approximations, as the numpy provider's ``_mlas_math``), bit for
bit: an ulp of difference there moves the steps of a DynamicQuantizeLinear downstream. Their
float32 fused multiply-adds are LLVM's ``fma`` intrinsic (one rounding, as MLAS; vectorised to FMA
instructions, a libm call on a CPU without them).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload
from onnxplug_sdk import mlas

_LOG2E = np.float32(1.44269504088896341)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
_MAX = np.float32(89.0)  # exp overflows float32 above ~88.72
_MIN = np.float32(-104.0)  # and is 0 below ~-103.97


@intrinsic
def _pow2_f32(typingctx, n):  # type: ignore[no-untyped-def]
    """2.0f ** n for an int32 n in [-126, 127], from the IEEE exponent field."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        biased = builder.add(args[0], ir.Constant(ir.IntType(32), 127))
        bits = builder.shl(biased, ir.Constant(ir.IntType(32), 23))
        return builder.bitcast(bits, ir.FloatType())

    return sig, codegen


@njit(inline="always", fastmath={"contract"}, cache=True)
def exp32(x):  # type: ignore[no-untyped-def]
    """exp for float32 (Cephes expf): inf on overflow, gradual underflow, NaN stays NaN."""
    v = np.float32(x)
    c = min(max(v, _MIN), _MAX)
    n = np.floor(c * _LOG2E + np.float32(0.5))
    r = c - n * _LN2_HI - n * _LN2_LO
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    k = np.int32(n)
    half = k >> 1  # 2**k in two factors, each a normal float32, so the product over/underflows right
    y = (p * r * r + r + np.float32(1.0)) * _pow2_f32(half) * _pow2_f32(k - half)
    return y if v == v else v


# MLAS logistic.cpp and tanh.cpp (the core's onnxplug.mlas): odd p and even q in x * x, highest
# power first; module-level tuples and floats, so numba compiles them in as constants
_LOGISTIC_LO, _LOGISTIC_HI, _LOGISTIC_P, _LOGISTIC_Q = mlas.LOGISTIC
_TANH_LO, _TANH_HI, _TANH_P, _TANH_Q = mlas.TANH


@njit(inline="always", cache=True)
def _clamp32(v, lo, hi):  # type: ignore[no-untyped-def]
    """v within [lo, hi], NaN kept."""
    v = v if (v >= lo or v != v) else np.float32(lo)
    return v if (v <= hi or v != v) else np.float32(hi)


@intrinsic
def _fma_f32(typingctx, a, b, c):  # type: ignore[no-untyped-def]
    """a * b + c rounded once, for float32 a, b, c."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.fma(*args)

    return sig, codegen


@njit(inline="always", cache=True)
def _fma32(a, s, c):  # type: ignore[no-untyped-def]
    """float32 fused multiply-add a * s + c (``s`` float64 holding a float32 value, ``c`` a float32
    value). Checked over every float32 input of sigmoid32 and tanh32: bit for bit the float64
    product-and-sum rounded to float32, at a fraction of the vector instructions."""
    return _fma_f32(np.float32(a), np.float32(s), np.float32(c))


@njit(inline="always", cache=True)
def sigmoid32(x):  # type: ignore[no-untyped-def]
    """The logistic function for float32 as onnxruntime computes it (MLAS): p(v) / q(v) + 1/2 on
    v = x clamped to [-18, 18], floored at 0. (Horner's rule unrolled: a loop over the
    coefficients stops LLVM from vectorising the caller's loop.)"""
    v = _clamp32(np.float32(x), _LOGISTIC_LO, _LOGISTIC_HI)
    s = np.float64(v * v)
    c = _LOGISTIC_P
    p = _fma32(_fma32(_fma32(_fma32(np.float32(c[0]), s, c[1]), s, c[2]), s, c[3]), s, c[4])
    c = _LOGISTIC_Q
    q = _fma32(_fma32(_fma32(_fma32(_fma32(np.float32(c[0]), s, c[1]), s, c[2]), s, c[3]), s, c[4]), s, c[5])
    y = p * v / q + np.float32(0.5)
    return y if (y >= 0 or y != y) else np.float32(0.0)


@njit(inline="always", cache=True)
def tanh32(x):  # type: ignore[no-untyped-def]
    """tanh for float32 as onnxruntime computes it (MLAS): p(v) / q(v) on v = x clamped to [-9, 9]."""
    v = _clamp32(np.float32(x), _TANH_LO, _TANH_HI)
    s = np.float64(v * v)
    c = _TANH_P
    p = _fma32(_fma32(_fma32(_fma32(_fma32(_fma32(np.float32(c[0]), s, c[1]), s, c[2]), s, c[3]), s, c[4]), s,
                      c[5]), s, c[6])
    c = _TANH_Q
    q = _fma32(_fma32(_fma32(np.float32(c[0]), s, c[1]), s, c[2]), s, c[3])
    return p * v / q


@njit(inline="always", fastmath={"contract"}, cache=True)
def erf32(x):  # type: ignore[no-untyped-def]
    """erf for float32: a Maclaurin series below 0.5, else Numerical Recipes' erfc approximation."""
    v = np.float32(x)
    z = abs(v)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.5) * z)
    poly = np.float32(0.17087277)
    for coeff in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418,
                  0.37409196, 1.00002368, -1.26551223):
        poly = poly * t + np.float32(coeff)
    erfc = t * exp32(-z * z + poly)
    r = np.float32(1.0) - erfc
    r = r if v >= 0 else -r
    # near 0, 1 - erfc cancels: the Maclaurin series is exact to float32 there
    s = v * v
    series = v * (np.float32(1.1283791671) + s * (np.float32(-0.3761263890) + s * (np.float32(0.1128379167) + s * (
        np.float32(-0.0268661706) + s * (np.float32(0.0052239776) + s * np.float32(-0.0008548327))))))
    return series if z < np.float32(0.5) else r


def sigmoid(x):  # type: ignore[no-untyped-def]  # pragma: no cover - replaced by the overload
    """The logistic function of a float scalar in compiled code: ``sigmoid32`` for float32."""
    raise NotImplementedError


def tanh(x):  # type: ignore[no-untyped-def]  # pragma: no cover - replaced by the overload
    """tanh of a float scalar in compiled code: ``tanh32`` for float32."""
    raise NotImplementedError


def _sigmoid64(x):  # type: ignore[no-untyped-def]
    if x >= 0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


def _tanh64(x):  # type: ignore[no-untyped-def]
    return np.tanh(x)


# Inlined into the loops (a call would carry numba's error checks and stop vectorisation); the
# plain Python functions are given so the inliner sees one function body, not a wrapper.
@overload(sigmoid, inline="always")
def _sigmoid_impl(x):  # type: ignore[no-untyped-def]
    return sigmoid32.py_func if x == types.float32 else _sigmoid64


@overload(tanh, inline="always")
def _tanh_impl(x):  # type: ignore[no-untyped-def]
    return tanh32.py_func if x == types.float32 else _tanh64
