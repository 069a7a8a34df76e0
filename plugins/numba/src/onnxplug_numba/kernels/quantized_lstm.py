"""Compiled parts of com.microsoft DynamicQuantizeLSTM (ops/op_quantized_lstm.py), as onnxruntime
computes them: a float32 operand quantized to uint8 over [min(0, x), max(0, x)] (as
kernels/quantize.py), its integer product with the 8-bit weights summed in int32 (exact, so the
order of the sums does not matter), scaled by ``a_scale * w_scale`` in float32. A step's gates are
``(x_part + h_part) + bias``, added in that order; activations are MLAS's (kernels/fastmath.py) and
the cell update has no fused multiply-adds. Products use AVX-512 VNNI where the CPU has it
(kernels/vnni.py: raw uint8 times int8, zero points corrected after); else the weights are taken
transposed, (4H, K), each output column one dot product of centered int16 values over a
contiguous row, which LLVM turns into pairwise 16-bit products.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit
from numba.core.errors import NumbaIRAssumptionWarning

from onnxplug_numba.kernels import vnni
from onnxplug_numba.kernels.fastmath import sigmoid as _sigmoid
from onnxplug_numba.kernels.fastmath import tanh as _tanh

# numba's pedantic SSA check warns about the names its inliner gives the inline="always"
# activations (as in kernels/rnn.py); the compiled code is unaffected
warnings.filterwarnings("ignore", r".*variable '[\w.]*_v\d+_[\w.]*' is not in scope", NumbaIRAssumptionWarning)


@njit(inline="always", cache=True)
def _parameters(x):  # type: ignore[no-untyped-def]
    """(scale, zero point) of DynamicQuantizeLinear over flat float32 ``x``, both float32 (scale 1
    for all zeros)."""
    hi = np.float32(0.0)
    lo = np.float32(0.0)
    for i in range(x.size):
        v = x[i]
        if v > hi:  # noqa: PLR1730 - a NaN compares false and is passed over (as kernels/quantize.py)
            hi = v
        if v < lo:  # noqa: PLR1730
            lo = v
    scale = (hi - lo) / np.float32(255.0) if hi != lo else np.float32(1.0)
    zp = np.float32(0.0) - lo / scale
    return scale, np.rint(min(max(zp, np.float32(0.0)), np.float32(255.0)))


@njit(inline="always", cache=True)
def _quantize(v, scale, zp):  # type: ignore[no-untyped-def]
    """One value quantized: float32 quotient, round half to even, zero point added, clipped."""
    q = np.rint(np.float32(v / scale)) + zp
    if not q >= 0:
        q = np.float32(0.0)
    elif q > 255:
        q = np.float32(255.0)
    return q


@njit(nogil=True, error_model="numpy", cache=True)
def quantize_centered(x, cq):  # type: ignore[no-untyped-def]
    """Quantize flat float32 ``x`` over one range and write ``q - zero_point`` (int16) into flat
    ``cq``; returns the scale."""
    scale, zp = _parameters(x)
    for i in range(x.size):
        cq[i] = np.int16(_quantize(x[i], scale, zp) - zp)
    return scale


@njit(nogil=True, error_model="numpy", cache=True)
def quantize_rows(x, q):  # type: ignore[no-untyped-def]
    """Quantize float32 ``x`` (rows, K) over one range into the first K columns of uint8 ``q``
    (rows, K padded); returns (scale, zero point as an integer)."""
    rows, k = x.shape
    scale, zp = _parameters(x.reshape(-1))
    for r in range(rows):
        for j in range(k):
            q[r, j] = np.uint8(_quantize(x[r, j], scale, zp))
    return scale, np.int64(zp)


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


@njit(inline="always", cache=True)
def _vnni_products(q, k, zq, packed, colsum, zs, acc):  # type: ignore[no-untyped-def]
    """acc[r, n] = sum_k (q[r, k] - zq) * (s[k, n] - zs): q uint8 (rows, K padded), s the packed
    int8 weights (kernels/vnni.py), acc (rows, columns padded)."""
    vnni.product(q, packed, acc)
    for r in range(q.shape[0]):
        total = 0
        for j in range(k):
            total += np.int64(q[r, j])
        base = k * zq * zs - zs * total
        a = acc[r]
        for c in range(a.size):
            a[c] = np.int32(np.int64(a[c]) + base - zq * np.int64(colsum[c]))


@njit(nogil=True, error_model="numpy", cache=True)
def input_products(cqx, wt, w_zero_point, mult, out):  # type: ignore[no-untyped-def]
    """out[r] = float32(cqx[r] @ (wt - w_zero_point)^T) * mult: cqx (rows, K) int16 centered
    quantized inputs, wt (4H, K) 8-bit, mult (4H) float32 ``x_scale * w_scale``, out (rows, 4H)."""
    four = wt.shape[0]
    acc = np.empty(four, dtype=np.int32)
    for r in range(cqx.shape[0]):
        _row_product(cqx[r], wt, w_zero_point, acc)
        o = out[r]
        for n in range(four):
            o[n] = np.float32(acc[n]) * mult[n]


#: Input rows per VNNI product call (bounds the int32 sums kept at once).
_CHUNK = 64


@njit(nogil=True, error_model="numpy", cache=True)
def input_products_vnni(qx, k, zq, packed, colsum, zs, mult, out):  # type: ignore[no-untyped-def]
    """:func:`input_products` on raw quantized inputs ``qx`` (rows, K padded) with zero point ``zq``
    and packed int8 weights ``s`` (kernels/vnni.py) with zero point ``zs``."""
    rows, four = qx.shape[0], out.shape[1]
    acc = np.empty((min(rows, _CHUNK), colsum.size), dtype=np.int32)
    for lo in range(0, rows, _CHUNK):
        hi = min(rows, lo + _CHUNK)
        part = acc[:hi - lo]
        _vnni_products(qx[lo:hi], k, zq, packed, colsum, zs, part)
        for r in range(hi - lo):
            a = part[r]
            o = out[lo + r]
            for n in range(four):
                o[n] = np.float32(a[n]) * mult[n]


@njit(inline="always", cache=True)
def _cell(x, acc, mult, bias, has_bias, p, has_p, g, cb, yb):  # type: ignore[no-untyped-def]
    """One row's gates (i, o, f, c) from its input part ``x`` and h product ``acc``, the cell state
    ``cb`` updated in place, h written to ``yb``. Peepholes ``p`` (i, o, f) are added before the
    bias, gate o's with the new cell state, as onnxruntime orders them."""
    four = x.size
    hidden = four // 4
    three = 3 * hidden
    for n in range(four):
        g[n] = x[n] + np.float32(acc[n]) * mult[n]
    if not has_p:
        if has_bias:
            for n in range(four):
                g[n] = g[n] + bias[n]
        # each activation over a contiguous run of gates, so LLVM vectorises it
        for n in range(three):
            g[n] = _sigmoid(g[n])
    else:
        for j in range(hidden):
            g[j] = g[j] + cb[j] * p[j]
            g[2 * hidden + j] = g[2 * hidden + j] + cb[j] * p[2 * hidden + j]
        if has_bias:
            for n in range(hidden):
                g[n] = g[n] + bias[n]
            for n in range(2 * hidden, four):
                g[n] = g[n] + bias[n]
        for j in range(hidden):
            g[j] = _sigmoid(g[j])
            g[2 * hidden + j] = _sigmoid(g[2 * hidden + j])
    gc = g[three:]
    for j in range(hidden):
        gc[j] = _tanh(gc[j])
    for j in range(hidden):
        cb[j] = cb[j] * g[2 * hidden + j] + g[j] * gc[j]
    if has_p:
        for j in range(hidden):
            o = g[hidden + j] + cb[j] * p[hidden + j]
            if has_bias:
                o = o + bias[hidden + j]
            g[hidden + j] = _sigmoid(o)
    for j in range(hidden):
        yb[j] = _tanh(cb[j]) * g[hidden + j]


@njit(nogil=True, error_model="numpy", cache=True)
def recurrence(xw, rt, r_zero_point, r_scale, bias, has_bias, p, has_p, h0, c0, reverse, lo, hi, block,
               y, h_out, c_out):  # type: ignore[no-untyped-def]
    """Batch rows lo..hi of one direction, h quantized per block of ``block`` rows (onnxruntime's
    rows per thread): xw (T, B, 4H) scaled input products of gates i, o, f, c; rt (4H, H) 8-bit;
    r_scale and bias (4H) float32; p (3H) peepholes; h0, c0 (B, H); y (T, B, H), h_out and c_out (B, H), any strides."""
    steps, four = xw.shape[0], xw.shape[2]
    hidden = four // 4
    acc = np.empty(four, dtype=np.int32)
    mult = np.empty(four, dtype=np.float32)
    g = np.empty(four, dtype=np.float32)
    for start in range(lo, hi, block):
        rows = min(hi, start + block) - start
        h = np.empty(rows * hidden, dtype=np.float32)  # flat: one quantization range per block
        c = np.empty((rows, hidden), dtype=np.float32)
        cq = np.empty(rows * hidden, dtype=np.int16)
        for r in range(rows):
            h[r * hidden:(r + 1) * hidden] = h0[start + r]
            c[r] = c0[start + r]
        for k in range(steps):
            t = steps - 1 - k if reverse else k
            scale = quantize_centered(h, cq)
            for n in range(four):
                mult[n] = scale * r_scale[n]
            for r in range(rows):
                _row_product(cq[r * hidden:(r + 1) * hidden], rt, r_zero_point, acc)
                _cell(xw[t, start + r], acc, mult, bias, has_bias, p, has_p, g, c[r], y[t, start + r])
            for r in range(rows):  # the block's new h, once every row of it ran
                h[r * hidden:(r + 1) * hidden] = y[t, start + r]
        for r in range(rows):
            h_out[start + r] = h[r * hidden:(r + 1) * hidden]
            c_out[start + r] = c[r]


@njit(nogil=True, error_model="numpy", cache=True)
def recurrence_vnni(xw, packed, colsum, zs, r_scale, bias, has_bias, p, has_p, h0, c0, reverse, lo, hi, block,
                    y, h_out, c_out):  # type: ignore[no-untyped-def]
    """:func:`recurrence` with R as packed int8 (kernels/vnni.py), its column sums and zero point."""
    steps, four = xw.shape[0], xw.shape[2]
    hidden = four // 4
    mult = np.empty(four, dtype=np.float32)
    g = np.empty(four, dtype=np.float32)
    padded = packed.shape[1] * 4
    for start in range(lo, hi, block):
        rows = min(hi, start + block) - start
        h = np.empty((rows, hidden), dtype=np.float32)
        c = np.empty((rows, hidden), dtype=np.float32)
        q = np.zeros((rows, padded), dtype=np.uint8)
        acc = np.empty((rows, colsum.size), dtype=np.int32)
        for r in range(rows):
            h[r] = h0[start + r]
            c[r] = c0[start + r]
        for k in range(steps):
            t = steps - 1 - k if reverse else k
            scale, zq = quantize_rows(h, q)
            for n in range(four):
                mult[n] = scale * r_scale[n]
            _vnni_products(q, hidden, zq, packed, colsum, zs, acc)
            for r in range(rows):
                _cell(xw[t, start + r], acc[r], mult, bias, has_bias, p, has_p, g, c[r], y[t, start + r])
            for r in range(rows):
                h[r] = y[t, start + r]
        for r in range(rows):
            h_out[start + r] = h[r]
            c_out[start + r] = c[r]
