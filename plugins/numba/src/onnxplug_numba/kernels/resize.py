"""A compiled 1-D resampling step: each output position is a weighted sum of a few input taps.

Resize is separable, so every mode (nearest, linear, cubic, antialiased) is this step applied
along each resized axis with its own tap table.
"""

from __future__ import annotations

from numba import njit


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
