"""float32 logistic and tanh computed the way onnxruntime's MLAS computes them, bit for bit.

MLAS evaluates both as Eigen's rational approximation p(x) / q(x) on the input clamped to a range
(odd p and even q in x * x, Horner's rule with one fused multiply-add per step, in float32); the
logistic adds 0.5 and clamps below at 0 only (it can return 1 + 1 ulp, as onnxruntime does). A
correctly rounded ``1 / (1 + exp(-x))`` differs by an ulp on about half of all inputs, enough to
move a DynamicQuantizeLinear step downstream. A float32 fused multiply-add is done in float64 (the
product is exact there, the sum rounded twice); against onnxruntime on x86-64 with FMA it is
bit-exact on millions of inputs (``tests/numpy_provider/test_mlas_math.py``). Platforms whose MLAS
kernel has no FMA (plain SSE2) are not matched bit for bit.
"""

from __future__ import annotations

import numpy as np

from onnxplug.mlas import LOGISTIC, TANH
from onnxplug.providers.numpy.runtime.blas import parallel_for
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch

_F32 = np.float32


#: (lower, upper) input range, then p's coefficients from the highest power, then q's (``onnxplug.mlas``).
_LOGISTIC = ((LOGISTIC.lower, LOGISTIC.upper), LOGISTIC.p, LOGISTIC.q)
_TANH = ((TANH.lower, TANH.upper), TANH.p, TANH.q)


#: Elements per block: the ~40 passes of a block stay in cache, each long enough that numpy's
#: per-call cost stays small and that threads sharing units seldom wait for the GIL.
_BLOCK = 32768
#: Elements per unit of work on the product threads (``parallel_for``), and a value's cost in
#: multiply-adds of a large product: tensors of a few hundred thousand values and up are split.
_UNIT = 4 * _BLOCK
_MACS_PER_VALUE = 128
#: Each thread's block scratch (24 bytes a value), kept across calls.
_SCRATCH = ThreadScratch(1 << 20)


def _horner(square: np.ndarray, coefficients: tuple[float, ...], wide: np.ndarray, acc: np.ndarray) -> None:
    """``acc`` = Horner's rule in x * x (``square``, float64 holding float32 values), each step one
    float32 fused multiply-add ``acc = fma(acc, square, c)``; ``wide`` is float64 scratch."""
    np.multiply(square, coefficients[0], out=wide)
    for c in coefficients[1:]:
        if c is not coefficients[1]:
            np.copyto(wide, acc)
            wide *= square
        wide += c
        np.copyto(acc, wide, casting="unsafe")


def _rational_into(flat: np.ndarray, out: np.ndarray, constants: tuple, logistic: bool) -> None:
    """``out`` = p(v) / q(v) in float32 for v = ``flat`` clamped to the range (np.maximum/minimum
    keep NaN), plus 0.5 clamped below at 0 when ``logistic``; both 1-D, block by block in this
    thread's scratch."""
    (lower, upper), p_coefficients, q_coefficients = constants
    n = min(flat.size, _BLOCK)
    narrow, wide64 = _SCRATCH.get(_F32, 2 * n), _SCRATCH.get(np.float64, 2 * n)
    v, q, square, wide = narrow[:n], narrow[n:], wide64[:n], wide64[n:]
    for start in range(0, flat.size, _BLOCK):
        stop = min(start + _BLOCK, flat.size)
        k = stop - start
        vb, qb, sb, wb, p = v[:k], q[:k], square[:k], wide[:k], out[start:stop]
        np.maximum(flat[start:stop], _F32(lower), out=vb)
        np.minimum(vb, _F32(upper), out=vb)
        np.multiply(vb, vb, out=qb)  # v * v is a float32 product
        np.copyto(sb, qb)
        _horner(sb, p_coefficients, wb, p)
        p *= vb
        _horner(sb, q_coefficients, wb, qb)
        np.divide(p, qb, out=p)
        if logistic:
            p += _F32(0.5)
            np.maximum(p, _F32(0), out=p)


def _rational(x: np.ndarray, constants: tuple, logistic: bool = False) -> np.ndarray:
    """p(v) / q(v) in float32 for v = x clamped to the range; large tensors in units on the product
    threads (every value is computed the same way wherever it runs)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, _F32)
    units = -(-flat.size // _UNIT)

    def unit(i: int) -> None:
        part = slice(i * _UNIT, (i + 1) * _UNIT)
        _rational_into(flat[part], out[part], constants, logistic)

    if units < 2 or not parallel_for(units, unit, flat.size * _MACS_PER_VALUE):
        _rational_into(flat, out, constants, logistic)
    return out.reshape(x.shape)


def mlas_logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) of a float32 array as MLAS's logistic kernel gives it."""
    return _rational(x, _LOGISTIC, logistic=True)


def mlas_tanh(x: np.ndarray) -> np.ndarray:
    """tanh of a float32 array as MLAS's tanh kernel gives it."""
    return _rational(x, _TANH)
