"""Vectorised special functions numpy lacks (no scipy dependency): the error function, and GELU on it."""

from __future__ import annotations

import math

import numpy as np

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI = math.sqrt(math.pi)
# erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (erf rounds to +-1 in float32 beyond): the rational fit of
# Eigen / XLA's float erf, within 8 float32 ulp (4.2e-7 absolute) and exact in relative terms near 0.
_ERF32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
            -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
            -1.42647390514189e-02)

# GELU's Phi(x) - 1/2 = (1/2) erf(x / sqrt 2) ~ c P(c^2) / Q(c^2), c = clip(x, -_GELU_CLIP, _GELU_CLIP):
# a (6, 4) rational fit of erf(z) on [0, 3.7], minimax in z * error (GELU's error is x times Phi's,
# so the tail where GELU is tiny matters) with the leading term fixed at 2/sqrt(pi) (slope at 0
# exact), rescaled to take x rather than x / sqrt 2 and to include the 1/2. Saves GELU's separate
# scaling passes; erf's error stays within 3.5e-7 absolute, GELU's within 1e-6 (2 ulp) of
# math.erf's (tests/numpy_provider/test_gelu_accuracy.py). Lowest degree first.
_GELU_P = (0.39894228040143265, 0.03400008464855149, 0.004387025051102235, 0.00015150930482003835,
           3.0804487380504397e-06, -2.264980983733476e-08, 1.2142638763506277e-10)
_GELU_Q = (1.0, 0.25189128068569205, 0.027981034431481425, 0.0017197247871905, 5.6430468419275244e-05)
#: A float32 clip point (x ~ 3.767 sqrt 2, where 1 - erf < 1e-7) in the middle of a run of values at
#: which the float32 evaluation of c P / Q is exactly 1/2, so GELU saturates exactly: Phi is 0 below
#: -_GELU_CLIP and 1 above (large negative inputs give -0, as x * 0.5 * (1 + erf) once erf is -1).
_GELU_CLIP = np.float32(5.3275957107543945)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in the dtype of ``x`` (float16/bfloat16 via float32)."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        return _erf64(x)
    return _erf32(x.astype(np.float32)).astype(x.dtype)


def _erf32(x: np.ndarray) -> np.ndarray:
    """float32 erf from one rational function, evaluated in place to keep memory traffic low."""
    x = np.clip(x, np.float32(-4), np.float32(4))  # NaN stays NaN
    x2 = x * x
    p = np.full_like(x, _ERF32_P[0])
    for c in _ERF32_P[1:]:
        p *= x2
        p += np.float32(c)
    p *= x
    q = np.full_like(x, _ERF32_Q[0])
    for c in _ERF32_Q[1:]:
        q *= x2
        q += np.float32(c)
    p /= q
    return p


def _erf64(x: np.ndarray) -> np.ndarray:
    """float64 erf within 8 ulp: a positive-term series below 1.5, an erfc continued fraction above."""
    a = np.abs(x)
    out = np.empty_like(a)
    near = a < 1.5
    xs = a[near]
    # erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (2n+1)!!  (all terms positive: no cancellation)
    ratio = 2.0 * xs * xs
    term = xs.copy()
    total = xs.copy()
    for n in range(1, 31):
        term *= ratio
        term /= 2 * n + 1
        total += term
    out[near] = _TWO_OVER_SQRT_PI * np.exp(-xs * xs) * total
    far = ~near
    xf = a[far]
    # erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated bottom-up.
    with np.errstate(all="ignore"):
        f = xf.copy()
        for k in range(80, 0, -1):  # enough terms for 1 ulp from x = 1.5 on
            np.divide(k / 2.0, f, out=f)
            f += xf
        out[far] = 1.0 - np.exp(-xf * xf) / (_SQRT_PI * f)
    out[np.isnan(a)] = np.nan
    return np.copysign(out, x)


def gelu(x: np.ndarray, approximate: str, bias: np.ndarray | None = None) -> np.ndarray:
    """GELU of ``x`` (+ ``bias``, a vector over the last axis) in x's dtype (float16 computed in
    float32); ``x`` is not modified."""
    if x.ndim == 0:  # numpy arithmetic on 0-d arrays gives scalars, which the in-place passes refuse
        return gelu(x.reshape(1), approximate, bias).reshape(())
    work = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    if bias is not None:
        work = work + bias.astype(work.dtype, copy=False)
    if approximate == "tanh":
        out = _gelu_tanh(work)
    elif work.dtype == np.float32:
        out = _gelu_erf32(work)
    else:
        t = work.dtype.type
        out = erf(work * t(1.0 / math.sqrt(2.0)))
        out += t(1)
        out *= work
        out *= t(0.5)
    return out.astype(x.dtype, copy=False)


def _gelu_tanh(work: np.ndarray) -> np.ndarray:
    t = work.dtype.type
    inner = work * work
    inner *= t(0.044715)
    inner += t(1)
    inner *= work
    inner *= t(math.sqrt(2.0 / math.pi))
    core = np.tanh(inner, out=inner)
    core += t(1)
    core *= work
    core *= t(0.5)
    return core


def _gelu_erf32(x: np.ndarray) -> np.ndarray:
    """x Phi(x) in float32 from one rational function: 26 numpy passes where erf-then-GELU takes 30."""
    c = np.clip(x, -_GELU_CLIP, _GELU_CLIP)  # NaN stays NaN
    y = c * c
    p = _horner(y, _GELU_P)
    p /= _horner(y, _GELU_Q)
    p *= c
    p += np.float32(0.5)
    p *= x
    return p


def _horner(y: np.ndarray, coefficients: tuple[float, ...]) -> np.ndarray:
    """sum_i coefficients[i] y^i in y's dtype (a new array), two passes per degree."""
    t = y.dtype.type
    out = y * t(coefficients[-1])
    for k in reversed(coefficients[1:-1]):
        out += t(k)
        out *= y
    out += t(coefficients[0])
    return out
