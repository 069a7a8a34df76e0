"""Compiled LSTM and GRU recurrences (default activations), one direction per call.

The input projections of all time steps are one BLAS product done beforehand (``xw``, biases
included); these loops do the sequential part: the hidden-state products and the gates.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(inline="always", cache=True)
def _sigmoid(v):  # type: ignore[no-untyped-def]
    if v >= 0:
        return 1.0 / (1.0 + np.exp(-v))
    e = np.exp(v)
    return e / (1.0 + e)


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def lstm(xw, r, p, has_p, h0, c0, reverse, y, h_out, c_out):  # type: ignore[no-untyped-def]
    """xw (T, B, 4H) gates i, o, f, c; r (4H, H); p (3H) peepholes i, o, f; y (T, B, H)."""
    steps, batch, four = xw.shape
    hidden = four // 4
    for b in range(batch):
        h = h0[b].astype(np.float64)
        c = c0[b].astype(np.float64)
        gates = np.empty(four, dtype=np.float64)
        for k in range(steps):
            t = steps - 1 - k if reverse else k
            for g in range(four):
                s = 0.0
                for j in range(hidden):
                    s += r[g, j] * h[j]
                gates[g] = xw[t, b, g] + s
            for j in range(hidden):
                gi = gates[j]
                go = gates[hidden + j]
                gf = gates[2 * hidden + j]
                gc = gates[3 * hidden + j]
                if has_p:
                    gi += p[j] * c[j]
                    gf += p[2 * hidden + j] * c[j]
                i = _sigmoid(gi)
                f = _sigmoid(gf)
                c[j] = f * c[j] + i * np.tanh(gc)
                if has_p:
                    go += p[hidden + j] * c[j]
                h[j] = _sigmoid(go) * np.tanh(c[j])
            for j in range(hidden):
                y[t, b, j] = h[j]
        for j in range(hidden):
            h_out[b, j] = h[j]
            c_out[b, j] = c[j]


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def gru(xw, r, rb, linear_before_reset, h0, reverse, y, h_out):  # type: ignore[no-untyped-def]
    """xw (T, B, 3H) gates z, r, h with input biases; r (3H, H); rb (3H) recurrence biases."""
    steps, batch, three = xw.shape
    hidden = three // 3
    for b in range(batch):
        h = h0[b].astype(np.float64)
        hr = np.empty(three, dtype=np.float64)
        z = np.empty(hidden, dtype=np.float64)
        gated = np.empty(hidden, dtype=np.float64)
        for k in range(steps):
            t = steps - 1 - k if reverse else k
            for g in range(2 * hidden):  # z and r: plain hidden products
                s = 0.0
                for j in range(hidden):
                    s += r[g, j] * h[j]
                hr[g] = s + rb[g]
            for j in range(hidden):
                z[j] = _sigmoid(xw[t, b, j] + hr[j])
                gated[j] = _sigmoid(xw[t, b, hidden + j] + hr[hidden + j])  # reset gate
            for g in range(hidden):
                s = 0.0
                row = 2 * hidden + g
                if linear_before_reset:
                    for j in range(hidden):
                        s += r[row, j] * h[j]
                    hr[row] = gated[g] * (s + rb[row])
                else:
                    for j in range(hidden):
                        s += r[row, j] * (gated[j] * h[j])
                    hr[row] = s + rb[row]
            for j in range(hidden):
                cand = np.tanh(xw[t, b, 2 * hidden + j] + hr[2 * hidden + j])
                h[j] = (1.0 - z[j]) * cand + z[j] * h[j]
                y[t, b, j] = h[j]
        for j in range(hidden):
            h_out[b, j] = h[j]
