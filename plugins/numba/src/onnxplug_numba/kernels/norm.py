"""Compiled row-wise normalisations: Softmax, LogSoftmax, LayerNormalization and RMSNormalization.

Each works on a 2-D (rows, columns) view whose rows are independent; statistics accumulate in float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels.fastmath import exp32


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def softmax_rows(x, log, y):  # type: ignore[no-untyped-def]
    """y[r] = softmax(x[r]) (or log-softmax when ``log``)."""
    rows, cols = x.shape
    for r in range(rows):
        top = -np.inf
        for c in range(cols):
            if x[r, c] > top:
                top = x[r, c]
        if log:
            s = 0.0
            for c in range(cols):
                s += np.exp(x[r, c] - top)
            shift = top + np.log(s)
            for c in range(cols):
                y[r, c] = x[r, c] - shift
        else:
            s = 0.0
            for c in range(cols):
                e = np.exp(x[r, c] - top)
                y[r, c] = e
                s += e
            inv = 1.0 / s
            for c in range(cols):
                y[r, c] = y[r, c] * inv


@njit(inline="always")
def _row_max_f32(row, lanes):  # type: ignore[no-untyped-def]
    """The largest element of a float32 row (NaNs skipped: they reach the result through exp).

    Eight running maxima, one per vector lane, so the loop vectorises (a single running maximum
    is a serial chain LLVM does not vectorise without fast-math's no-NaN promise)."""
    cols = row.shape[0]
    body = cols - cols % 8
    lanes[:] = -np.inf
    for c0 in range(0, body, 8):
        for j in range(8):
            v = row[c0 + j]
            lanes[j] = v if v > lanes[j] else lanes[j]
    top = np.float32(-np.inf)
    for j in range(8):
        top = lanes[j] if lanes[j] > top else top
    for c in range(body, cols):
        top = row[c] if row[c] > top else top
    return top


#: exp(x - max) below this is flushed to 0: smaller results are subnormal floats (exp(-87.3) is the
#: smallest normal one), each of whose products and sums costs a microcode assist, so masked
#: scores (the float's lowest value, or -1e4) made softmax rows five times slower. What is dropped
#: is under 2e-38 of the row's sum.
_SUBNORMAL_EXP = np.float32(-87.0)


@njit(inline="always", fastmath={"contract"})
def _exp_normal(d):  # type: ignore[no-untyped-def]
    """exp32(d) for d <= 0, or 0 where it would be subnormal, NaN kept (selects: the loop stays
    vectorised; the flushed lanes compute exp of the bound, so no subnormal is ever formed)."""
    keep = (d > _SUBNORMAL_EXP) | (d != d)
    e = exp32(d if keep else _SUBNORMAL_EXP)
    return e if keep else np.float32(0.0)


@njit(inline="always", fastmath={"contract", "reassoc"})
def _softmax_row_f32(row, log, out, lanes):  # type: ignore[no-untyped-def]
    """out = softmax(row) (or log-softmax), float32 sums (reassociated, so vectorised)."""
    cols = row.shape[0]
    top = _row_max_f32(row, lanes)
    s = np.float32(0.0)
    if log:
        for c in range(cols):
            s += _exp_normal(row[c] - top)
        shift = top + np.float32(np.log(s))
        for c in range(cols):
            out[c] = row[c] - shift
        return
    for c in range(cols):
        e = _exp_normal(row[c] - top)
        out[c] = e
        s += e
    inv = np.float32(1.0) / s
    for c in range(cols):
        out[c] *= inv


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def softmax_rows_f32(x, log, y):  # type: ignore[no-untyped-def]
    """softmax_rows for float32, with the vectorisable exp and maximum."""
    lanes = np.empty(8, dtype=np.float32)
    for r in range(x.shape[0]):
        _softmax_row_f32(x[r], log, y[r], lanes)


@njit(inline="always", fastmath={"contract"})
def _scaled_row(x, scale, bias, has_bias, r, row):  # type: ignore[no-untyped-def]
    """row = x[b, h, i] * scale (+ bias[b, h, i]) for flat row ``r`` of x (B, H, S, L)."""
    heads, q_len = x.shape[1], x.shape[2]
    b = r // (heads * q_len)
    h = (r // q_len) % heads
    i = r % q_len
    src = x[b, h, i]
    sc = x.dtype.type(scale)
    if has_bias:
        bias_row = bias[b, h, i]
        for c in range(row.shape[0]):
            row[c] = src[c] * sc + bias_row[c]
    else:
        for c in range(row.shape[0]):
            row[c] = src[c] * sc
    return b, h, i


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def scaled_softmax_f32(x, scale, bias, has_bias, y, lo, hi):  # type: ignore[no-untyped-def]
    """Attention probabilities: y[b, h, i] = softmax(x[b, h, i] * scale (+ bias[b, h, i])) for the
    rows ``[lo, hi)`` of the B*H*S; ``bias`` may be a broadcast (zero-stride) view of any layout."""
    row = np.empty(x.shape[3], dtype=x.dtype)
    lanes = np.empty(8, dtype=np.float32)
    for r in range(lo, hi):
        b, h, i = _scaled_row(x, scale, bias, has_bias, r, row)
        _softmax_row_f32(row, False, y[b, h, i], lanes)


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def scaled_softmax_f64(x, scale, bias, has_bias, y, lo, hi):  # type: ignore[no-untyped-def]
    """scaled_softmax_f32 for float64."""
    row = np.empty(x.shape[3], dtype=x.dtype)
    for r in range(lo, hi):
        b, h, i = _scaled_row(x, scale, bias, has_bias, r, row)
        top = -np.inf
        for c in range(row.shape[0]):
            top = row[c] if row[c] > top else top
        s = 0.0
        out = y[b, h, i]
        for c in range(row.shape[0]):
            e = np.exp(row[c] - top)
            out[c] = e
            s += e
        inv = 1.0 / s
        for c in range(row.shape[0]):
            out[c] *= inv


def scaled_softmax(x, scale, bias, has_bias, y, lo, hi):  # type: ignore[no-untyped-def]
    """The scaled, masked attention softmax with the kernel for the scores' dtype."""
    (scaled_softmax_f32 if x.dtype == np.float32 else scaled_softmax_f64)(x, scale, bias, has_bias, y, lo, hi)


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def layer_norm_rows(x, scale, bias, epsilon, y, mean_out, inv_std_out):  # type: ignore[no-untyped-def]
    """y[r] = (x[r] - mean) / sqrt(var + eps) * scale + bias; also each row's mean and 1/std."""
    rows, cols = x.shape
    for r in range(rows):
        s = 0.0
        for c in range(cols):
            s += x[r, c]
        mean = s / cols
        v = 0.0
        for c in range(cols):
            d = x[r, c] - mean
            v += d * d
        inv = 1.0 / np.sqrt(v / cols + epsilon)
        for c in range(cols):
            y[r, c] = (x[r, c] - mean) * inv * scale[c] + bias[c]
        mean_out[r] = mean
        inv_std_out[r] = inv


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def skip_layer_norm_rows(x, skip, bias, has_bias, scale, shift, epsilon, s_out, y):  # type: ignore[no-untyped-def]
    """s_out[r] = x[r] + skip[r] (+ bias), in the input dtype; then y[r] = LayerNorm(s_out[r]) * scale
    + shift, statistics in float64 (as layer_norm_rows): one pass over the inputs instead of three."""
    rows, cols = x.shape
    for r in range(rows):
        srow = s_out[r]
        if has_bias:
            for c in range(cols):
                srow[c] = x[r, c] + skip[r, c] + bias[c]
        else:
            for c in range(cols):
                srow[c] = x[r, c] + skip[r, c]
        total = 0.0
        for c in range(cols):
            total += srow[c]
        mean = total / cols
        v = 0.0
        for c in range(cols):
            d = srow[c] - mean
            v += d * d
        inv = 1.0 / np.sqrt(v / cols + epsilon)
        for c in range(cols):
            y[r, c] = (srow[c] - mean) * inv * scale[c] + shift[c]


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def rms_norm_rows(x, scale, epsilon, y):  # type: ignore[no-untyped-def]
    """y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * scale."""
    rows, cols = x.shape
    for r in range(rows):
        s = 0.0
        for c in range(cols):
            s += float(x[r, c]) * float(x[r, c])
        inv = 1.0 / np.sqrt(s / cols + epsilon)
        for c in range(cols):
            y[r, c] = x[r, c] * inv * scale[c]


def softmax(rows, log, out):  # type: ignore[no-untyped-def]
    """Row softmax (or log-softmax) with the kernel for the rows' dtype."""
    (softmax_rows_f32 if rows.dtype == np.float32 else softmax_rows)(rows, log, out)
