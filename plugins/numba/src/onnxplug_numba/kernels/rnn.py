"""Compiled LSTM and GRU recurrences (default activations), one direction per call.

The input projections of all time steps are one BLAS product done beforehand (``xw``, without
biases: the loops add them when they start a step's gates); these loops do the sequential part.
The hidden-state product of a step is, for float32, the register-blocked tile of
``kernels.rnn_tile`` over ``R^T`` packed in panels (3-D weights); for float64 (``R^T`` as
(H, cols)) rows of ``R^T`` scaled by one hidden value and added to the whole batch's gate rows, so
the innermost loop is contiguous and LLVM vectorises it. float32 uses the activations of
``kernels.fastmath`` (onnxruntime's own, bit for bit); float64 uses libm.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit, prange, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import overload

from onnxplug_numba.kernels.fastmath import sigmoid as _sigmoid
from onnxplug_numba.kernels.fastmath import tanh as _tanh
from onnxplug_numba.kernels.rnn_tile import PANEL, add_panel_products


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


def _product(acc, w, h):  # type: ignore[no-untyped-def]  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def _width(w):  # type: ignore[no-untyped-def]  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def _panel_product(acc, w, h):  # type: ignore[no-untyped-def]
    add_panel_products(acc, w, h, 0, w.shape[0])


def _row_product(acc, w, h):  # type: ignore[no-untyped-def]
    _add_products(acc, w, h, 0, w.shape[1])


@overload(_product, inline="always")
def _product_impl(acc, w, h):  # type: ignore[no-untyped-def]
    """acc[:, :_width(w)] += h @ R^T, R^T as float32 panels (3-D) or plain (H, cols)."""
    return _panel_product if w.ndim == 3 else _row_product


@overload(_width, inline="always")
def _width_impl(w):  # type: ignore[no-untyped-def]
    """The columns of R^T the product writes (panels are padded to whole panels)."""
    if w.ndim == 3:
        return lambda w: w.shape[0] * PANEL
    return lambda w: w.shape[1]


@njit(nogil=True, error_model="numpy", fastmath={"contract"}, cache=True)
def lstm(xw, bias, w, p, has_p, h0, c0, reverse, y, h_out, c_out):  # type: ignore[no-untyped-def]
    """xw (T, B, 4H) input projections of gates i, o, f, c and bias (4H) for them; w R^T (panels
    or (H, 4H)); p (3H) peepholes i, o, f; h0, c0 (B, H); y (T, B, H), any strides."""
    steps, batch, four = xw.shape
    hidden = four // 4
    h = np.empty((batch, hidden), dtype=xw.dtype)
    c = np.empty((batch, hidden), dtype=xw.dtype)
    h[:, :] = h0
    c[:, :] = c0
    gates = np.zeros((batch, _width(w)), dtype=xw.dtype)
    for k in range(steps):
        t = steps - 1 - k if reverse else k
        for b in range(batch):
            g = gates[b]
            x = xw[t, b]
            for q in range(four):
                g[q] = x[q] + bias[q]
        _product(gates, w, h)
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
            yb = y[t, b]
            for j in range(hidden):
                yb[j] = hb[j]
    h_out[:, :] = h
    c_out[:, :] = c


@njit(nogil=True, error_model="numpy", fastmath={"contract"}, cache=True)
def gru(xw, xb, w_zr, w_h, rb, linear_before_reset, h0, reverse, y, h_out):  # type: ignore[no-untyped-def]
    """xw (T, B, 3H) input projections of gates z, r, h and xb (3H) their input biases; w_zr, w_h
    R^T of gates z, r and of gate h (panels or plain); rb (3H) recurrence biases; y any strides."""
    steps, batch, three = xw.shape
    hidden = three // 3
    two = 2 * hidden
    h = np.empty((batch, hidden), dtype=xw.dtype)
    h[:, :] = h0
    a_zr = np.zeros((batch, _width(w_zr)), dtype=xw.dtype)  # biases + recurrent products
    a_h = np.zeros((batch, _width(w_h)), dtype=xw.dtype)
    gated = np.empty((batch, hidden), dtype=xw.dtype)  # r * h, without linear_before_reset
    for k in range(steps):
        t = steps - 1 - k if reverse else k
        for b in range(batch):
            a_zr[b, :two] = rb[:two]
            a_h[b, :hidden] = rb[two:]
        _product(a_zr, w_zr, h)
        if linear_before_reset:
            _product(a_h, w_h, h)
            for b in range(batch):
                x = xw[t, b]
                zr = a_zr[b]
                ah = a_h[b]
                hb = h[b]
                yb = y[t, b]
                for j in range(hidden):
                    zj = _sigmoid(x[j] + xb[j] + zr[j])
                    rj = _sigmoid(x[hidden + j] + xb[hidden + j] + zr[hidden + j])
                    cand = _tanh(x[two + j] + xb[two + j] + rj * ah[j])
                    hb[j] = cand + zj * (hb[j] - cand)  # (1 - z) * cand + z * h, in the input's dtype
                for j in range(hidden):
                    yb[j] = hb[j]
        else:
            for b in range(batch):
                x = xw[t, b]
                zr = a_zr[b]
                for j in range(hidden):
                    rj = _sigmoid(x[hidden + j] + xb[hidden + j] + zr[hidden + j])
                    gated[b, j] = rj * h[b, j]
            _product(a_h, w_h, gated)
            for b in range(batch):
                x = xw[t, b]
                zr = a_zr[b]
                ah = a_h[b]
                hb = h[b]
                yb = y[t, b]
                for j in range(hidden):
                    zj = _sigmoid(x[j] + xb[j] + zr[j])
                    cand = _tanh(x[two + j] + xb[two + j] + ah[j])
                    hb[j] = cand + zj * (hb[j] - cand)
                for j in range(hidden):
                    yb[j] = hb[j]
    h_out[:, :] = h


# Compiling the recurrences inside a prange region trips numba's pedantic SSA check on the names
# the inliner gives our inline="always" helpers (``<helper>_v<n>...``, a warning per name, "please
# report"); the compiled code is unaffected (tests compare both paths' results), so those are hidden.
warnings.filterwarnings("ignore", r".*variable '[\w.]*_v\d+_[\w.]*' is not in scope", NumbaIRAssumptionWarning)

#: Only the prange loop is parallelised (numba's other array rewrites have nothing to do here).
_PRANGE_ONLY = {"prange": True, "comprehension": False, "reduction": False, "setitem": False, "numpy": False,
                "stencil": False, "fusion": False, "inplace_binop": False}


# Both directions of a bidirectional layer in one prange region, one direction per item: handing a
# direction to a Python pool thread costs a wake-up of a halted virtual CPU, while prange workers
# spin a while after each region.
@njit(nogil=True, parallel=_PRANGE_ONLY, cache=True)
def lstm_both_directions(xw, bias, w_forward, w_reverse, p, has_p, h0, c0, y, h_out, c_out):  # type: ignore[no-untyped-def]
    """:func:`lstm` for direction 0 (forward) and 1 (reverse) at once: xw (T, B, 2, 4H), bias
    (2, 4H), p (2, 3H), h0 and c0 (2, B, H), y (T, 2, B, H), h_out and c_out (2, B, H)."""
    for d in prange(2):
        w = w_forward if d == 0 else w_reverse  # one call site: the recurrence is compiled once
        lstm(xw[:, :, d], bias[d], w, p[d], has_p, h0[d], c0[d], d == 1, y[:, d], h_out[d], c_out[d])


@njit(nogil=True, parallel=_PRANGE_ONLY, cache=True)
def gru_both_directions(xw, xb, w_zr_forward, w_h_forward, w_zr_reverse, w_h_reverse, rb, linear_before_reset,
                        h0, y, h_out):  # type: ignore[no-untyped-def]
    """:func:`gru` for direction 0 (forward) and 1 (reverse) at once: xw (T, B, 2, 3H), xb and rb
    (2, 3H), h0 (2, B, H), y (T, 2, B, H), h_out (2, B, H)."""
    for d in prange(2):
        w_zr = w_zr_forward if d == 0 else w_zr_reverse  # one call site: the recurrence is compiled once
        w_h = w_h_forward if d == 0 else w_h_reverse
        gru(xw[:, :, d], xb[d], w_zr, w_h, rb[d], linear_before_reset, h0[d], d == 1, y[:, d], h_out[d])
