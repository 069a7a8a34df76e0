"""Compiled resampling steps: each output position is a weighted sum of a few input taps.

Resize is separable, so every mode (nearest, linear, cubic, antialiased) is ``apply_taps`` applied
along each resized axis with its own tap table. The two innermost axes of (planes, H, W) have their
own kernels: ``gather_planes`` for nearest (a pure copy of the chosen element) and ``taps_planes``,
which runs the H pass then the W pass row by row and rounds in between exactly as two
``apply_taps`` calls would (same float64 sums, same contraction), so both paths agree bit for bit.
``*_shared`` split the planes over a numba prange region.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(nogil=True, fastmath={"contract"}, cache=True)
def apply_taps(x, index, weight, y):  # type: ignore[no-untyped-def]
    """y[o, j, i] = sum_k weight[j, k] * x[o, index[j, k], i] for x (outer, in, inner)."""
    outer, _, inner = x.shape
    out_len, taps = index.shape
    for t in range(outer * out_len):
        o = t // out_len
        j = t % out_len
        for i in range(inner):
            s = 0.0
            for k in range(taps):
                s += weight[j, k] * x[o, index[j, k], i]
            y[o, j, i] = s


@njit(nogil=True, cache=True)
def gather_planes(x, ih, iw, y, lo, hi):  # type: ignore[no-untyped-def]
    """y[p, j, i] = x[p, ih[j], iw[i]] for planes p in [lo, hi); a row equal to the one above is copied."""
    out_h, out_w = y.shape[1], y.shape[2]
    for p in range(lo, hi):
        for j in range(out_h):
            if j > 0 and ih[j] == ih[j - 1]:
                for i in range(out_w):
                    y[p, j, i] = y[p, j - 1, i]
                continue
            r = ih[j]
            for i in range(out_w):
                y[p, j, i] = x[p, r, iw[i]]


@njit(nogil=True, fastmath={"contract"}, cache=True)
def taps_planes(x, ih, wh, iw, ww, y, lo, hi):  # type: ignore[no-untyped-def]
    """The H pass (taps ih, wh: (out_h, taps)) then the W pass (iw, ww: (taps, out_w), rows of taps
    contiguous for the gathers) of planes [lo, hi), one output row at a time. (Plain indexing, no
    row views: each view costs reference counting.)"""
    width = x.shape[2]
    out_h, out_w = y.shape[1], y.shape[2]
    th, tw = ih.shape[1], iw.shape[0]
    row = np.empty(width, dtype=y.dtype)
    for p in range(lo, hi):
        for j in range(out_h):
            if th == 2:  # linear and nearest: two rows, one vectorised sweep
                ra, rb, wa, wb = ih[j, 0], ih[j, 1], wh[j, 0], wh[j, 1]
                for i in range(width):
                    s = 0.0
                    s += wa * x[p, ra, i]
                    s += wb * x[p, rb, i]
                    row[i] = s
            else:
                for i in range(width):
                    s = 0.0
                    for k in range(th):
                        s += wh[j, k] * x[p, ih[j, k], i]
                    row[i] = s
            if tw == 2:
                for i in range(out_w):
                    s = 0.0
                    s += ww[0, i] * row[iw[0, i]]
                    s += ww[1, i] * row[iw[1, i]]
                    y[p, j, i] = s
            else:
                for i in range(out_w):
                    s = 0.0
                    for k in range(tw):
                        s += ww[k, i] * row[iw[k, i]]
                    y[p, j, i] = s


@njit(nogil=True, parallel=True, cache=True)
def gather_planes_shared(items, x, ih, iw, y):  # type: ignore[no-untyped-def]
    total = x.shape[0]
    for item in prange(items):
        gather_planes(x, ih, iw, y, total * item // items, total * (item + 1) // items)


@njit(nogil=True, parallel=True, cache=True)
def taps_planes_shared(items, x, ih, wh, iw, ww, y):  # type: ignore[no-untyped-def]
    total = x.shape[0]
    for item in prange(items):
        taps_planes(x, ih, wh, iw, ww, y, total * item // items, total * (item + 1) // items)
