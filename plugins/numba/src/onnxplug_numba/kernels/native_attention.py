"""Multi-head attention in one prange region: each (image, head) item runs its score product,
its softmax and its context product back to back, while the item's scores are in the core's cache.

The heads are read and written in place through BLAS's row pitch (head h of a (B, S, H*d) tensor is
an S x d matrix with pitch H*d), so there is no transpose before or after. float32, with the
parallel kernels' requirements (see native_parallel: a reachable OpenBLAS sgemm, one BLAS thread per
call, a thread-safe numba threading layer).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from onnxplug_numba.kernels.native_parallel import AVAILABLE, sgemm_strided
from onnxplug_numba.kernels.norm import _softmax_row_f32

_NO_TRANS, _TRANS = 111, 112

if AVAILABLE:
    @njit(inline="always", fastmath={"contract", "reassoc"})
    def _attend_item(q, k, v, scale, bias, has_bias, heads, out, item):  # type: ignore[no-untyped-def]
        """Item ``item`` (image item // heads, head item % heads) of ``attention``."""
        n_img, q_len, q_width = q.shape
        length, v_width = k.shape[1], v.shape[2]
        dk, dv = q_width // heads, v_width // heads
        b = item // heads
        h = item % heads
        scores = np.empty((q_len, length), dtype=np.float32)
        lanes = np.empty(8, dtype=np.float32)
        sgemm_strided(_TRANS, q_len, length, dk, scale, q.ctypes.data + 4 * (b * q_len * q_width + h * dk),
                      q_width, k.ctypes.data + 4 * (b * length * q_width + h * dk), q_width, 0.0,
                      scores.ctypes.data, length)
        bias_b = bias[b if bias.shape[0] > 1 else 0, h if bias.shape[1] > 1 else 0]
        for i in range(q_len):
            row = scores[i]
            if has_bias:
                bias_row = bias_b[i if bias.shape[2] > 1 else 0]
                if bias.shape[3] == 1:
                    for c in range(length):
                        row[c] += bias_row[0]
                else:
                    for c in range(length):
                        row[c] += bias_row[c]
            _softmax_row_f32(row, False, row, lanes)  # in place: each value is read before it is written
        sgemm_strided(_NO_TRANS, q_len, dv, length, 1.0, scores.ctypes.data, length,
                      v.ctypes.data + 4 * (b * length * v_width + h * dv), v_width, 0.0,
                      out.ctypes.data + 4 * (b * q_len * v_width + h * dv), v_width)

    @njit(nogil=True, parallel=True, fastmath={"contract", "reassoc"}, cache=True)
    def attention(q, k, v, scale, bias, has_bias, heads, out):  # type: ignore[no-untyped-def]
        """out[b, i, h*dv:(h+1)*dv] = softmax(q_bh[i] . k_bh * scale (+ bias[b, h, i])) @ v_bh for
        C-contiguous float32 q (B, S, H*dk), k (B, L, H*dk), v (B, L, H*dv), out (B, S, H*dv);
        ``bias`` is 4-D, each dim 1 or the scores' (B, H, S, L)."""
        for item in prange(q.shape[0] * heads):
            _attend_item(q, k, v, scale, bias, has_bias, heads, out, item)

    @njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
    def attention_serial(q, k, v, scale, bias, has_bias, heads, out):  # type: ignore[no-untyped-def]
        """``attention`` on the calling thread: for attention smaller than a prange region's
        hand-off to its workers. (A function of its own: numba's cache keeps one entry per
        function, so a serial compilation of ``attention`` itself would replace the parallel one.)"""
        for item in range(q.shape[0] * heads):
            _attend_item(q, k, v, scale, bias, has_bias, heads, out, item)
