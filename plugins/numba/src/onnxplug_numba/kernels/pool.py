"""Compiled 2-D max and average pooling over (N*C, H, W), with pads, strides, dilations and ceil_mode.

Window ``o`` starts at ``o * stride - pad_begin``; taps past the end padding are not part of the
window (ceil_mode's extra window), as onnxruntime computes them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MAX, AVERAGE = 0, 1


@njit(nogil=True, cache=True)
def pool2d(x, kind, count_include_pad, kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w, y):  # type: ignore[no-untyped-def]
    """``y[t]`` = max or mean over each window of ``x[t]``; ``end_*`` = input size + end padding."""
    planes, height, width = x.shape
    oh, ow = y.shape[1], y.shape[2]
    for t in range(planes):
        for yo in range(oh):
            hs = yo * sh - ph
            for xo in range(ow):
                ws = xo * sw - pw
                acc = -np.inf if kind == MAX else 0.0
                valid = 0
                window = 0
                for i in range(kh):
                    iy = hs + i * dh
                    if iy >= end_h:
                        break
                    for j in range(kw):
                        ix = ws + j * dw
                        if ix >= end_w:
                            break
                        window += 1
                        if iy < 0 or iy >= height or ix < 0 or ix >= width:
                            continue
                        valid += 1
                        v = x[t, iy, ix]
                        if kind == MAX:
                            if v > acc or v != v:
                                acc = v
                        else:
                            acc += v
                if kind == MAX:
                    y[t, yo, xo] = acc
                else:
                    count = window if count_include_pad else valid
                    y[t, yo, xo] = acc / count if count > 0 else np.nan


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
