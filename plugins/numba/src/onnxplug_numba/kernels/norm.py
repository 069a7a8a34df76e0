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


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def softmax_rows_f32(x, log, y):  # type: ignore[no-untyped-def]
    """softmax_rows for float32, with the vectorisable exp."""
    rows, cols = x.shape
    for r in range(rows):
        top = -np.inf
        for c in range(cols):
            if x[r, c] > top:
                top = x[r, c]
        if log:
            s = 0.0
            for c in range(cols):
                s += exp32(x[r, c] - top)
            shift = top + np.log(s)
            for c in range(cols):
                y[r, c] = x[r, c] - shift
        else:
            s = 0.0
            for c in range(cols):
                e = exp32(x[r, c] - top)
                y[r, c] = e
                s += e
            inv = 1.0 / s
            for c in range(cols):
                y[r, c] = y[r, c] * inv


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
