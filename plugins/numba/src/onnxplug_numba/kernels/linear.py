"""Compiled row kernels of the linear ai.onnx.ml ops: X @ coef + bias with the best class and a
post-transform per row (LinearClassifier), Normalizer's MAX / L1 / L2 rows and Scaler's affine map.

Dot products and norms accumulate in float64 and are rounded to float32 once; results are float32.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels.forest import transform_row

MAX, L1, L2 = range(3)


@njit(nogil=True, cache=True)
def affine_rows(x, coef, bias, out):
    """out[r] = float32(x[r] @ coef) + bias, float32 (``x`` any float type)."""
    rows, features = x.shape
    cols = coef.shape[1]
    for r in range(rows):
        for c in range(cols):
            acc = 0.0
            for f in range(features):
                acc += np.float32(x[r, f]) * coef[f, c]
            out[r, c] = np.float32(acc) + bias[c]


@njit(nogil=True, cache=True)
def classify_scores(z, post, best):
    """The first best column of each row of float32 scores ``z`` into ``best``, then ``post`` in place."""
    for r in range(z.shape[0]):
        pick = 0
        for c in range(1, z.shape[1]):
            if z[r, c] > z[r, pick]:
                pick = c
        best[r] = pick
        transform_row(z, r, post)


@njit(nogil=True, cache=True)
def normalize_rows(x, norm, out):
    """Each float32 row divided by its max (MAX), sum of |x| (L1) or L2 norm; rows whose divisor is 0
    pass through."""
    rows, cols = x.shape
    for r in range(rows if cols else 0):
        if norm == MAX:
            div = np.float32(x[r, 0])
            for c in range(1, cols):
                div = max(div, np.float32(x[r, c]))
        else:
            acc = 0.0
            for c in range(cols):
                v = np.float32(x[r, c])
                acc += abs(v) if norm == L1 else v * v
            div = np.float32(acc) if norm == L1 else np.float32(np.sqrt(np.float32(acc)))
        for c in range(cols):
            v = np.float32(x[r, c])
            out[r, c] = v / div if div != 0 else v


@njit(nogil=True, cache=True)
def scale_rows(x, offset, scale, out):
    """out = (float32(x) - offset) * scale, offset and scale per column or one for all."""
    rows, cols = x.shape
    for r in range(rows):
        for c in range(cols):
            o = offset[c] if offset.size > 1 else offset[0]
            s = scale[c] if scale.size > 1 else scale[0]
            out[r, c] = (np.float32(x[r, c]) - o) * s
