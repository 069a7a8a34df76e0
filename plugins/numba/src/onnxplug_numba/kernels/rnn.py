"""Compiled LSTM and GRU recurrences (default activations), one direction per call.

The input projections of all time steps are one BLAS product done beforehand (``xw``, biases
included); these loops do the sequential part. The hidden-state product of a step is written as
rows of ``R^T`` (``rt``, (H, gates*H)) scaled by one hidden value and added to the whole batch's
gate rows, so the innermost loop is contiguous and LLVM vectorises it, and each row of ``rt`` is
read once per step for the whole batch. float32 uses the vectorisable activations of
``kernels.fastmath``; float64 uses libm.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from onnxplug_numba.kernels.fastmath import sigmoid32, tanh32


def _sigmoid(x):  # type: ignore[no-untyped-def]  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def _tanh(x):  # type: ignore[no-untyped-def]  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def _sigmoid64(x):  # type: ignore[no-untyped-def]
    if x >= 0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


def _tanh64(x):  # type: ignore[no-untyped-def]
    return np.tanh(x)


# Inlined into the loops (a call would carry numba's error checks and stop vectorisation); the
# plain Python functions are given so the inliner sees one function body, not a wrapper.
@overload(_sigmoid, inline="always")
def _sigmoid_impl(x):  # type: ignore[no-untyped-def]
    return sigmoid32.py_func if x == types.float32 else _sigmoid64


@overload(_tanh, inline="always")
def _tanh_impl(x):  # type: ignore[no-untyped-def]
    return tanh32.py_func if x == types.float32 else _tanh64


@njit(inline="always", fastmath={"contract"})
def _add_products(acc, rt, h, lo, hi):  # type: ignore[no-untyped-def]
    """acc[b, lo:hi] += sum_j h[b, j] * rt[j, lo:hi] for every batch row b.

    Four rows of ``rt`` per pass over ``acc``: a quarter of the loads and stores of ``acc``."""
    batch, hidden = h.shape
    full = hidden - hidden % 4
    for j in range(0, full, 4):
        r0, r1, r2, r3 = rt[j], rt[j + 1], rt[j + 2], rt[j + 3]
        for b in range(batch):
            h0, h1, h2, h3 = h[b, j], h[b, j + 1], h[b, j + 2], h[b, j + 3]
            a = acc[b]
            for q in range(lo, hi):
                a[q] += r0[q] * h0 + r1[q] * h1 + r2[q] * h2 + r3[q] * h3
    for j in range(full, hidden):
        row = rt[j]
        for b in range(batch):
            hj = h[b, j]
            a = acc[b]
            for q in range(lo, hi):
                a[q] += row[q] * hj


@njit(nogil=True, error_model="numpy", fastmath={"contract"}, cache=True)
def lstm(xw, rt, p, has_p, h0, c0, reverse, y, h_out, c_out):  # type: ignore[no-untyped-def]
    """xw (T, B, 4H) gates i, o, f, c; rt (H, 4H); p (3H) peepholes i, o, f; h0, c0 (B, H); y (T, B, H)."""
    steps, batch, four = xw.shape
    hidden = four // 4
    h = np.empty((batch, hidden), dtype=xw.dtype)
    c = np.empty((batch, hidden), dtype=xw.dtype)
    h[:, :] = h0
    c[:, :] = c0
    gates = np.empty((batch, four), dtype=xw.dtype)
    for k in range(steps):
        t = steps - 1 - k if reverse else k
        gates[:, :] = xw[t]
        _add_products(gates, rt, h, 0, four)
        for b in range(batch):
            g = gates[b]
            cb = c[b]
            hb = h[b]
            if has_p:
                for j in range(hidden):
                    i = _sigmoid(g[j] + p[j] * cb[j])
                    f = _sigmoid(g[2 * hidden + j] + p[2 * hidden + j] * cb[j])
                    cc = f * cb[j] + i * _tanh(g[3 * hidden + j])
                    cb[j] = cc
                    hb[j] = _sigmoid(g[hidden + j] + p[hidden + j] * cc) * _tanh(cc)
            else:
                for j in range(hidden):
                    i = _sigmoid(g[j])
                    f = _sigmoid(g[2 * hidden + j])
                    cc = f * cb[j] + i * _tanh(g[3 * hidden + j])
                    cb[j] = cc
                    hb[j] = _sigmoid(g[hidden + j]) * _tanh(cc)
            for j in range(hidden):
                y[t, b, j] = hb[j]
    h_out[:, :] = h
    c_out[:, :] = c


@njit(nogil=True, error_model="numpy", fastmath={"contract"}, cache=True)
def gru(xw, rt, rb, linear_before_reset, h0, reverse, y, h_out):  # type: ignore[no-untyped-def]
    """xw (T, B, 3H) gates z, r, h with input biases; rt (H, 3H); rb (3H) recurrence biases."""
    steps, batch, three = xw.shape
    hidden = three // 3
    h = np.empty((batch, hidden), dtype=xw.dtype)
    h[:, :] = h0
    hr = np.empty((batch, three), dtype=xw.dtype)
    gated = np.empty((batch, hidden), dtype=xw.dtype)  # r * h, without linear_before_reset
    z = np.empty(hidden, dtype=xw.dtype)
    for k in range(steps):
        t = steps - 1 - k if reverse else k
        for b in range(batch):
            hr[b, :] = rb
        if linear_before_reset:
            _add_products(hr, rt, h, 0, three)
            for b in range(batch):
                x = xw[t, b]
                a = hr[b]
                hb = h[b]
                for j in range(hidden):
                    zj = _sigmoid(x[j] + a[j])
                    rj = _sigmoid(x[hidden + j] + a[hidden + j])
                    cand = _tanh(x[2 * hidden + j] + rj * a[2 * hidden + j])
                    hb[j] = cand + zj * (hb[j] - cand)  # (1 - z) * cand + z * h, in the input's dtype
                    y[t, b, j] = hb[j]
        else:
            _add_products(hr, rt, h, 0, 2 * hidden)
            for b in range(batch):
                x = xw[t, b]
                a = hr[b]
                for j in range(hidden):
                    rj = _sigmoid(x[hidden + j] + a[hidden + j])
                    gated[b, j] = rj * h[b, j]
            _add_products(hr, rt, gated, 2 * hidden, three)
            for b in range(batch):
                x = xw[t, b]
                a = hr[b]
                hb = h[b]
                for j in range(hidden):
                    z[j] = _sigmoid(x[j] + a[j])
                for j in range(hidden):
                    cand = _tanh(x[2 * hidden + j] + a[2 * hidden + j])
                    hb[j] = cand + z[j] * (hb[j] - cand)
                    y[t, b, j] = hb[j]
    h_out[:, :] = h
