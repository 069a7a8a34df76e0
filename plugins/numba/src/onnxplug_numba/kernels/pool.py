"""Compiled 2-D max and average pooling over (N*C, H, W), with pads, strides, dilations and ceil_mode.

Window ``o`` starts at ``o * stride - pad_begin``; taps past the end padding are not part of the
window (ceil_mode's extra window), as onnxruntime computes them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MAX, AVERAGE = 0, 1


@njit(nogil=True, error_model="numpy", cache=True)
def pool2d(x, kind, count_include_pad, kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w, y):  # type: ignore[no-untyped-def]
    """``y[t]`` = max or mean over each window of ``x[t]``; ``end_*`` = input size + end padding.

    One output row at a time: for each tap (i, j) the range of output columns whose tap falls
    inside the input is worked out once, so the innermost loop has no bounds tests and
    vectorises. Windows are separable, so a window's element counts are rows x columns."""
    planes, height, width = x.shape
    oh, ow = y.shape[1], y.shape[2]
    col_lo = np.empty(kw, dtype=np.int64)  # per tap column j: output columns [lo, hi) read inside x
    col_hi = np.empty(kw, dtype=np.int64)
    col_valid = np.zeros(ow, dtype=np.int64)  # per output column: taps inside x, taps before end_w
    col_window = np.zeros(ow, dtype=np.int64)
    for j in range(kw):
        lo, hi = 0, 0
        found = False
        for xo in range(ow):
            ix = xo * sw - pw + j * dw
            if ix < end_w:
                col_window[xo] += 1
            if 0 <= ix < width:
                col_valid[xo] += 1
                if not found:
                    lo, found = xo, True
                hi = xo + 1
        col_lo[j], col_hi[j] = lo, hi
    acc = np.empty(ow, dtype=np.float64)  # sums in float64, as the reference does
    top = np.empty(ow, dtype=x.dtype)  # maxima in the input's dtype (exact)
    for t in range(planes):
        for yo in range(oh):
            hs = yo * sh - ph
            rows_valid = 0
            rows_window = 0
            if kind == MAX:
                top[:] = -np.inf
            else:
                acc[:] = 0.0
            for i in range(kh):
                iy = hs + i * dh
                if iy >= end_h:
                    break
                rows_window += 1
                if iy < 0 or iy >= height:
                    continue
                rows_valid += 1
                src = x[t, iy]
                for j in range(kw):
                    off = j * dw - pw
                    if kind == MAX:
                        for xo in range(col_lo[j], col_hi[j]):
                            v = src[xo * sw + off]
                            a = top[xo]
                            top[xo] = v if (v > a or v != v) else a
                    else:
                        for xo in range(col_lo[j], col_hi[j]):
                            acc[xo] += src[xo * sw + off]
            out = y[t, yo]
            if kind == MAX:
                for xo in range(ow):
                    out[xo] = top[xo] if rows_valid * col_valid[xo] > 0 else -np.inf
            else:
                for xo in range(ow):
                    count = rows_window * col_window[xo] if count_include_pad else rows_valid * col_valid[xo]
                    out[xo] = acc[xo] / count if count > 0 else np.nan


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def global_pool(x, kind, y):  # type: ignore[no-untyped-def]
    """``y[t]`` = max or mean of row ``x[t]`` (rows are (N*C), columns the spatial elements)."""
    rows, size = x.shape
    for t in range(rows):
        if kind == MAX:
            acc = -np.inf
            for p in range(size):
                v = x[t, p]
                if v > acc or v != v:
                    acc = v
            y[t] = acc
        else:
            s = 0.0
            for p in range(size):
                s += x[t, p]
            y[t] = s / size
