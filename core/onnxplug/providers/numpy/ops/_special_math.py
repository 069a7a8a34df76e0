"""Vectorised special functions numpy lacks (no scipy dependency): the error function, and GELU on it."""

from __future__ import annotations

import functools
import math

import numpy as np

from onnxplug.providers.numpy.ops._scratch import ThreadScratch

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI = math.sqrt(math.pi)
# erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (erf rounds to +-1 in float32 beyond): the rational fit of
# Eigen / XLA's float erf, within 8 float32 ulp (4.2e-7 absolute) and exact in relative terms near 0.
_ERF32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
            -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
            -1.42647390514189e-02)

#: float32 GELU: Phi by linear interpolation in a table of Phi at steps of 2^-_PHI_STEP_BITS over
#: [-_PHI_RANGE, _PHI_RANGE]. Interpolation error at most step^2 / 8 * max|Phi''| = 3e-8; beyond the
#: range Phi is 0 or 1 in float32 (1 - Phi(5.5) = 1.9e-8 < half an ulp of 1).
_PHI_STEP_BITS = 10
_PHI_RANGE = 5.5
_TABLE_SCRATCH = ThreadScratch(8 << 20)


@functools.lru_cache(maxsize=None)
def _phi_lines() -> np.ndarray:
    """(2, 2K + 1) float32: per table step k in [-K, K] (index k + K) the line ``a + s * u`` through
    Phi at u = k and k + 1, u being the argument in steps (x * 2^_PHI_STEP_BITS). Row 0 holds the
    intercepts a, row 1 the slopes s. The ends are the constants 0 and 1, so clipped arguments
    saturate exactly. An intercept is Phi(k) - s k: up to 0.24 from Phi, which costs ~1e-7 of
    rounding against the chord form ``Phi(k) + s (u - k)``, and saves the three passes that form
    the fraction u - k."""
    k_max = int(_PHI_RANGE * 2 ** _PHI_STEP_BITS)
    k = np.arange(-k_max, k_max + 2)
    phi = np.array([0.5 * math.erfc(-v * 2.0 ** -_PHI_STEP_BITS / math.sqrt(2.0)) for v in k])
    slope = np.diff(phi)
    intercept = phi[:-1] - slope * k[:-1]
    intercept[0], slope[0], intercept[-1], slope[-1] = 0.0, 0.0, 1.0, 0.0
    return np.stack([intercept, slope]).astype(np.float32)


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
    """``out = x Phi(x)`` for float32 ``x`` (``out`` may be ``x``): Phi on the line of its table step
    (``_phi_lines``), both coefficients fetched by one gather; 9 numpy passes where the best
    rational function found took 26 (within 5e-7 of math.erf's GELU;
    tests/numpy_provider/test_gelu_accuracy.py). The step's index is floor(u + K): the float sum may
    round up to the next step just below its start, whose line is then used a fraction of an ulp
    early. The gather takes an intp index (numpy converts any other first). NaN stays NaN (its index
    is the zero end of the table, then NaN * 0)."""
    lines = _phi_lines()
    limit = np.float32(_PHI_RANGE * 2 ** _PHI_STEP_BITS)
    n = x.size
    f32 = _TABLE_SCRATCH.get(np.dtype(np.float32), 3 * n)
    u = f32[:n].reshape(x.shape)
    coefficients = f32[n:].reshape((2,) + x.shape)
    shifted = coefficients[0]  # free until the gather fills it
    index = _TABLE_SCRATCH.get(np.dtype(np.intp), n).reshape(x.shape)
    np.multiply(x, np.float32(2 ** _PHI_STEP_BITS), out=u)  # exact: a power of two
    # fmax, unlike clip, takes NaN to -limit: every index is then in the table, as 'wrap' (faster
    # than 'clip': 132 against 183 us for 128K values) needs; x * Phi keeps the NaN
    np.fmax(u, -limit, out=u)
    np.fmin(u, limit, out=u)
    np.add(u, limit, out=shifted)
    np.copyto(index, shifted, casting="unsafe")  # >= 0, so truncation is floor
    np.take(lines, index, axis=1, out=coefficients, mode="wrap")
    np.multiply(coefficients[1], u, out=u)
    np.add(u, coefficients[0], out=u)
    return np.multiply(x, u, out=out)
