"""Vectorised special functions numpy lacks (no scipy dependency): the error function, and GELU on it."""

from __future__ import annotations

import math

import numpy as np

from onnxplug.providers.numpy.runtime.scratch import ThreadScratch

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI = math.sqrt(math.pi)
# erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (erf rounds to +-1 in float32 beyond): the rational fit of
# Eigen / XLA's float erf, within 8 float32 ulp (4.2e-7 absolute) and exact in relative terms near 0.
_ERF32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
            -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
            -1.42647390514189e-02)

#: float32 GELU: Phi(x) = sigmoid(logit Phi(x)) = (1 + tanh(logit Phi(x) / 2)) / 2, with logit Phi(x)
#: ~ x P(x^2), P of degree 6 (coefficients of x^0, x^2, ..., x^12). Fitted (reweighted least squares
#: toward minimax, float64) to logit(Phi(x)) / x on x in (0, 6], weighting the error by Phi(1 - Phi) x,
#: which is what an error in the logit costs GELU. P is positive and increasing for x^2 >= 0, so x P(x^2)
#: is odd and increasing and large arguments saturate through tanh (tests/numpy_provider/
#: test_gelu_accuracy.py). Degree 5 fits turn negative past the range.
_LOGIT_PHI = (1.595769883092708, 0.07266616826549183, -6.518883636454584e-05, -0.00011061291584981097,
              7.929596755376488e-06, -2.64536146039523e-07, 3.5126294225028645e-09)
#: The halved coefficients as 0-d float32 arrays (a 0-d operand dispatches faster than a scalar).
_HALF_LOGIT_PHI = tuple(np.array(c / 2, dtype=np.float32) for c in _LOGIT_PHI)
_HALF = np.array(0.5, dtype=np.float32)
_SCRATCH = ThreadScratch(8 << 20)


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
        out = gelu_erf32_into(work, work if work is not x else np.empty_like(work))
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


def gelu_erf32_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = x Phi(x)`` for float32 ``x`` (``out`` may be ``x``): Phi through tanh of the fitted
    logit (``_LOGIT_PHI``), 17 numpy passes and a tanh, all on contiguous float32 (within 6e-7 of
    math.erf's GELU; tests/numpy_provider/test_gelu_accuracy.py), cheaper than an interpolated table
    (a gather, and casts to form its index). As in onnxruntime's
    ``x / 2 (1 + erf(x / sqrt 2))`` in float32, Phi rounds to exactly 1 or 0 once tanh rounds to 1
    or -1 (from x ~ 5.4 up and x ~ -5.7 down; onnxruntime's erf from +-5.5): far negative values
    give 0, -inf gives NaN (-inf * 0), and NaN stays NaN. Squares that overflow (|x| > 1.8e19)
    saturate the same way. Temporaries come from per-thread scratch."""
    n = x.size
    work = _SCRATCH.get(np.dtype(np.float32), 2 * n)
    w = work[:n].reshape(x.shape)
    p = work[n:].reshape(x.shape)
    coefficients = _HALF_LOGIT_PHI
    np.multiply(x, x, out=w)
    np.multiply(w, coefficients[-1], out=p)
    np.add(p, coefficients[-2], out=p)
    for c in coefficients[-3::-1]:  # Horner in x^2
        np.multiply(p, w, out=p)
        np.add(p, c, out=p)
    np.multiply(p, x, out=p)
    np.tanh(p, out=p)
    np.multiply(p, _HALF, out=p)
    np.add(p, _HALF, out=p)
    return np.multiply(x, p, out=out)
