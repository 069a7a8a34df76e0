"""Vectorisable float32 exp, tanh, sigmoid and erf.

numba calls libm for ``np.exp`` on scalars, which stops LLVM from vectorising a loop. These are
branch-free (selects only) polynomial versions with Cephes' coefficients, accurate to a few float32
ulps; 2**n is built from its exponent bits by an LLVM bitcast.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

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


@njit(inline="always", fastmath={"contract"}, cache=True)
def sigmoid32(x):  # type: ignore[no-untyped-def]
    v = np.float32(x)
    return np.float32(1.0) / (np.float32(1.0) + exp32(-v))


@njit(inline="always", fastmath={"contract"}, cache=True)
def tanh32(x):  # type: ignore[no-untyped-def]
    """tanh for float32: Cephes' odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above."""
    v = np.float32(x)
    a = abs(v)
    z = v * v
    small = ((((np.float32(-5.70498872745e-3) * z + np.float32(2.06390887954e-2)) * z
               - np.float32(5.37397155531e-2)) * z + np.float32(1.33314422036e-1)) * z
             - np.float32(3.33332819422e-1)) * z * v + v
    large = np.float32(1.0) - np.float32(2.0) / (exp32(a + a) + np.float32(1.0))
    large = large if v >= 0 else -large
    return small if a < np.float32(0.625) else large


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
