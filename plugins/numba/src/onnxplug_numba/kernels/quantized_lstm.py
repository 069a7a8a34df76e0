"""Compiled parts of com.microsoft DynamicQuantizeLSTM (ops/op_quantized_lstm.py), as onnxruntime
computes them: a float32 operand quantized to uint8 over [min(0, x), max(0, x)] (as
kernels/quantize.py), its integer product with the 8-bit weights summed in int32 (exact, so the
order of the sums does not matter), scaled by ``a_scale * w_scale`` in float32. A step's gates are
``(x_part + h_part) + bias``, added in that order; activations are MLAS's (kernels/fastmath.py) and
the cell update has no fused multiply-adds. Weights are taken transposed, (4H, K), so each output
column is one dot product over a contiguous row, which LLVM turns into pairwise 16-bit products.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit
from numba.core.errors import NumbaIRAssumptionWarning

from onnxplug_numba.kernels.fastmath import sigmoid as _sigmoid
from onnxplug_numba.kernels.fastmath import tanh as _tanh

# numba's pedantic SSA check warns about the names its inliner gives the inline="always"
# activations (as in kernels/rnn.py); the compiled code is unaffected
warnings.filterwarnings("ignore", r".*variable '[\w.]*_v\d+_[\w.]*' is not in scope", NumbaIRAssumptionWarning)


@njit(nogil=True, error_model="numpy", cache=True)
def quantize_centered(x, cq):  # type: ignore[no-untyped-def]
    """Quantize flat float32 ``x`` to uint8 over [min(0, x), max(0, x)] and write ``q - zero_point``
    (int16) into flat ``cq``; returns the scale (float32). Scale and rounding as DynamicQuantizeLinear
    (scale 1 for all zeros; float32 quotient, round half to even)."""
    n = x.size
    hi = np.float32(0.0)
    lo = np.float32(0.0)
    for i in range(n):
        v = x[i]
        if v > hi:
            hi = v
        if v < lo:
            lo = v
    scale = (hi - lo) / np.float32(255.0) if hi != lo else np.float32(1.0)
    zp = np.float32(0.0) - lo / scale
    zp = np.rint(min(max(zp, np.float32(0.0)), np.float32(255.0)))
    for i in range(n):
        q = np.rint(np.float32(x[i] / scale)) + zp
        if not q >= 0:
            q = np.float32(0.0)
        elif q > 255:
            q = np.float32(255.0)
        cq[i] = np.int16(q - zp)
    return scale


@njit(inline="always", cache=True)
def _row_product(a, wt, w_zero_point, acc):  # type: ignore[no-untyped-def]
    """acc[n] = sum_k a[k] * (wt[n, k] - w_zero_point) in int32; a int16 (K), wt 8-bit (N, K)."""
    k = a.size
    for c in range(wt.shape[0]):
        w = wt[c]
        s = 0
        for j in range(k):
            s += np.int32(a[j]) * np.int32(w[j])
        acc[c] = s  # (kept apart from the zero point term: LLVM then sums in 16-bit pairs)
    if w_zero_point != 0:
        total = 0
        for j in range(k):
            total += a[j]
        shift = np.int32(w_zero_point * total)
        for c in range(wt.shape[0]):
            acc[c] -= shift


@njit(nogil=True, error_model="numpy", cache=True)
def input_products(cqx, wt, w_zero_point, mult, out):  # type: ignore[no-untyped-def]
    """out[r] = float32(cqx[r] @ (wt - w_zero_point)^T) * mult: cqx (rows, K) int16 centered
    quantized inputs, wt (4H, K) 8-bit, mult (4H) float32 ``x_scale * w_scale``, out (rows, 4H)."""
    rows = cqx.shape[0]
    four = wt.shape[0]
    acc = np.empty(four, dtype=np.int32)
    for r in range(rows):
        _row_product(cqx[r], wt, w_zero_point, acc)
        o = out[r]
        for n in range(four):
            o[n] = np.float32(acc[n]) * mult[n]


@njit(nogil=True, error_model="numpy", cache=True)
def recurrence(xw, rt, r_zero_point, r_scale, bias, has_bias, h0, c0, reverse, lo, hi, block,
               y, h_out, c_out):  # type: ignore[no-untyped-def]
    """Batch rows lo..hi of one direction, h quantized per block of ``block`` rows (onnxruntime's
    rows per thread): xw (T, B, 4H) scaled input products of gates i, o, f, c; rt (4H, H) 8-bit;
    r_scale and bias (4H) float32; h0, c0 (B, H); y (T, B, H), h_out and c_out (B, H), any strides."""
    steps = xw.shape[0]
    four = xw.shape[2]
    hidden = four // 4
    acc = np.empty(four, dtype=np.int32)
    mult = np.empty(four, dtype=np.float32)
    g = np.empty(four, dtype=np.float32)
    for start in range(lo, hi, block):
        stop = min(hi, start + block)
        rows = stop - start
        h = np.empty(rows * hidden, dtype=np.float32)  # flat: one quantization range per block
        c = np.empty((rows, hidden), dtype=np.float32)
        cq = np.empty(rows * hidden, dtype=np.int16)
        for r in range(rows):
            for j in range(hidden):
                h[r * hidden + j] = h0[start + r, j]
                c[r, j] = c0[start + r, j]
        for k in range(steps):
            t = steps - 1 - k if reverse else k
            scale = quantize_centered(h, cq)
            for n in range(four):
                mult[n] = scale * r_scale[n]
            for r in range(rows):
                b = start + r
                _row_product(cq[r * hidden:(r + 1) * hidden], rt, r_zero_point, acc)
                x = xw[t, b]
                for n in range(four):
                    g[n] = x[n] + np.float32(acc[n]) * mult[n]
                if has_bias:
                    for n in range(four):
                        g[n] = g[n] + bias[n]
                cb = c[r]
                yb = y[t, b]
                for j in range(hidden):
                    i = _sigmoid(g[j])
                    o = _sigmoid(g[hidden + j])
                    f = _sigmoid(g[2 * hidden + j])
                    cc = cb[j] * f + i * _tanh(g[3 * hidden + j])
                    cb[j] = cc
                    hv = _tanh(cc) * o
                    yb[j] = hv
            # h of the step is read back from y only after every row of the block ran
            for r in range(rows):
                yb = y[t, start + r]
                for j in range(hidden):
                    h[r * hidden + j] = yb[j]
        for r in range(rows):
            for j in range(hidden):
                h_out[start + r, j] = h[r * hidden + j]
                c_out[start + r, j] = c[r, j]
