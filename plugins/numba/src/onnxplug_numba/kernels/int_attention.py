"""Self-attention after a fused Q, K, V projection (com.microsoft QAttention, ops/op_qattention.py),
in the numpy provider's order (core/.../com_microsoft/_attention.py ``attend``): per image and
head, scores ``q . k`` summed in float32 over the head's width, times ``scale``, plus the additive
mask; minus the row's maximum, exponentiated, divided by their sum; then the weighted sum of v.

qkv is (B, S, 3 * H * d) float32 with the heads side by side in each third, read in place; the
output (B, S, H * d). One call per range of images, for the session's threads, or one call with
the projection (``projected``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels import int_matmul as kim


@njit(nogil=True, error_model="numpy", cache=True)
def attend(qkv, heads, scale, bias, has_bias, ends, starts, has_ends, filter_value, causal, lo, hi,
           out):  # type: ignore[no-untyped-def]
    """Images lo..hi of ``out``. The additive mask: ``bias`` (B, 1, S, S) float32 when
    ``has_bias``; else ``filter_value`` for keys outside [starts[b], ends[b]) when ``has_ends``,
    overwritten by float32's lowest value for keys after the query when ``causal``."""
    lowest = np.finfo(np.float32).min
    seq = qkv.shape[1]
    width = qkv.shape[2] // 3
    d = width // heads
    scores = np.empty(seq, np.float32)
    acc = np.empty(d, np.float32)
    for b in range(lo, hi):
        x = qkv[b]
        for h in range(heads):
            qo, ko, vo = h * d, width + h * d, 2 * width + h * d
            for i in range(seq):
                top = -np.inf
                for j in range(seq):
                    s = np.float32(0.0)
                    for t in range(d):
                        s += x[i, qo + t] * x[j, ko + t]
                    s = s * scale
                    if has_bias:
                        s = s + bias[b, 0, i, j]
                    elif causal and j > i:
                        s = s + lowest
                    elif has_ends and (j >= ends[b] or j < starts[b]):
                        s = s + filter_value
                    scores[j] = s
                    top = max(top, s)
                total = np.float32(0.0)
                for j in range(seq):
                    e = np.exp(scores[j] - np.float32(top))
                    scores[j] = e
                    total += e
                for j in range(seq):
                    scores[j] = scores[j] / total
                acc[:] = 0.0
                for j in range(seq):
                    p = scores[j]
                    for t in range(d):
                        acc[t] += p * x[j, vo + t]
                out[b, i, qo:qo + d] = acc


@njit(nogil=True, error_model="numpy", cache=True)
def projected(x, shift, azp, packed, colsum, bzp, sa, sb, qkv_bias, heads, scale, bias, has_bias, ends, starts,
              has_ends, filter_value, causal, out):  # type: ignore[no-untyped-def]
    """QAttention in one call: the projection of 8-bit ``x`` (B, S, K) by B prepared for VNNI
    (kernels/int_matmul.py) to float32 with ``qkv_bias``, then :func:`attend` over every image."""
    batch, seq, k = x.shape
    width = out.shape[2]
    qkv = np.empty((batch, seq, 3 * width), np.float32)
    kim.float_vnni(x.reshape(batch * seq, k), shift, azp, packed, colsum, bzp, sa, sb, qkv_bias, True,
                   qkv.reshape(batch * seq, 3 * width))
    attend(qkv, heads, scale, bias, has_bias, ends, starts, has_ends, filter_value, causal, 0, batch, out)
