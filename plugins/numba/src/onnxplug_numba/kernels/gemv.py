"""Few-row products with a large weight: y (M, N) = alpha * x (M, K) @ w.T + bias for w (N, K),
C-contiguous (Gemm's transB layout, or a constant weight laid out so once by its kernel).

Such products (classifier heads) do little arithmetic per weight element, so reading ``w`` bounds
them: four weight rows at a time are dotted with every input row while they are in the L1 cache,
so ``w`` is read once whatever M (BLAS's product with a transposed weight slows with each row).
One thread: a numba prange region here waited for its second worker whenever the cores were busy
(onnxruntime's spinning threads, other processes), and a Python pool hand-off costs about as much
as the product. Sums are reassociated (vector lanes), so results differ from BLAS's within float
rounding. ``bias`` is a vector over N (``has_bias``), added after the scaling, as Gemm's beta * C.
"""

from __future__ import annotations

from numba import njit

_FAST = {"reassoc", "contract"}


@njit(inline="always", fastmath=_FAST)
def _dot4(xr, w, j, k):  # type: ignore[no-untyped-def]
    zero = xr.dtype.type(0)
    a0, a1, a2, a3 = zero, zero, zero, zero
    w0, w1, w2, w3 = w[j], w[j + 1], w[j + 2], w[j + 3]
    for t in range(k):
        v = xr[t]
        a0 += v * w0[t]
        a1 += v * w1[t]
        a2 += v * w2[t]
        a3 += v * w3[t]
    return a0, a1, a2, a3


@njit(nogil=True, fastmath=_FAST, cache=True)
def product_band(x, w, alpha, bias, has_bias, y, c0, c1):  # type: ignore[no-untyped-def]
    """Columns ``c0:c1`` of y = alpha * x @ w.T (+ bias) for w (N, K)."""
    m, k = x.shape
    j = c0
    while j + 4 <= c1:
        for r in range(m):
            a0, a1, a2, a3 = _dot4(x[r], w, j, k)
            out = y[r]
            out[j], out[j + 1], out[j + 2], out[j + 3] = a0 * alpha, a1 * alpha, a2 * alpha, a3 * alpha
            if has_bias:
                for q in range(j, j + 4):
                    out[q] += bias[q]
        j += 4
    for q in range(j, c1):
        wq = w[q]
        for r in range(m):
            xr = x[r]
            s = xr.dtype.type(0)
            for t in range(k):
                s += xr[t] * wq[t]
            s *= alpha
            y[r, q] = s + bias[q] if has_bias else s
