"""ai.onnx Attention (opset 23+): scaled dot-product attention with masks, causality, a KV cache,
grouped KV heads, softcap and the qk_matmul_output modes. BLAS products, compiled softmax.

Not claimed (left to the default provider): nonpad_kv_seqlen, sliding windows, non-float dtypes.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_numba.kernels import norm as knorm
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain, matmul
from onnxplug_numba.provider import NumbaProvider


def _heads_first(x: np.ndarray, heads: int) -> np.ndarray:
    """(B, S, heads * D) -> (B, heads, S, D)."""
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


@NumbaProvider.kernel("Attention", 23)
class Attention(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if len(node.inputs) > 6 and node.inputs[6]:  # nonpad_kv_seqlen
            return False
        if int(node.attr("left_window_size", -1)) >= 0 or int(node.attr("right_window_size", -1)) >= 0:
            return False
        if int(node.attr("qk_matmul_output_mode", 0)) not in (0, 1, 2, 3):
            return False
        floats = [n for i, n in enumerate(node.inputs) if n and i != 3] + [o for o in node.outputs if o]
        dtypes = {view.dtype_of(n) for n in floats}
        mask = node.inputs[3] if len(node.inputs) > 3 else ""
        if mask and view.dtype_of(mask) not in (*dtypes, np.dtype(bool)):
            return False
        return len(dtypes) == 1 and next(iter(dtypes)) in FLOAT_TYPES

    def compute(self, q, k, v, mask=None, past_key=None, past_value=None, nonpad=None):  # type: ignore[no-untyped-def]
        three_d = q.ndim == 3
        if three_d:
            q = _heads_first(q, int(self.attr("q_num_heads")))
            k = _heads_first(k, int(self.attr("kv_num_heads")))
            v = _heads_first(v, int(self.attr("kv_num_heads")))
        dtype = q.dtype
        scale = self.attr("scale")
        scale = 1.0 / np.sqrt(q.shape[3]) if scale is None else float(scale)
        present_key = np.concatenate((past_key, k), axis=2) if past_key is not None else k
        present_value = np.concatenate((past_value, v), axis=2) if past_value is not None else v
        q_len, kv_len = q.shape[2], present_key.shape[2]
        bias = self._bias(mask, q_len, kv_len, past_key.shape[2] if past_key is not None else 0, dtype)
        keys, values = present_key, present_value
        if q.shape[1] != keys.shape[1] and q.shape[1] % keys.shape[1] == 0:  # grouped KV heads
            reps = q.shape[1] // keys.shape[1]
            keys, values = np.repeat(keys, reps, axis=1), np.repeat(values, reps, axis=1)
        root = dtype.type(np.sqrt(scale))
        qk = matmul(q * root, np.swapaxes(keys, 2, 3) * root, self.threads)
        softcap = self.attr("softcap")
        if softcap is not None and float(softcap) > 0:
            cap = dtype.type(float(softcap))
            qk = (np.tanh(qk / cap) * cap).astype(dtype)
        scores = qk + bias
        mode = int(self.attr("qk_matmul_output_mode", 0))
        rows = np.ascontiguousarray(scores, dtype=dtype).reshape(-1, kv_len)
        probs = np.empty_like(rows)
        self.threads.run(lambda lo, hi: knorm.softmax(rows[lo:hi], False, probs[lo:hi]), rows.shape[0],
                         row_grain(kv_len))
        probs = probs.reshape(scores.shape)
        masked = np.isneginf(np.max(bias, axis=-1, keepdims=True))
        if masked.any():
            probs = np.where(masked, dtype.type(0), probs)
        out = matmul(probs, values, self.threads)
        if three_d:
            out = np.ascontiguousarray(out.transpose(0, 2, 1, 3)).reshape(out.shape[0], out.shape[2], -1)
        qk_out = {0: qk, 1: qk, 2: scores, 3: probs}[mode].astype(dtype)
        return out, present_key, present_value, qk_out

    def _bias(self, mask: np.ndarray | None, q_len: int, kv_len: int, past: int, dtype: np.dtype) -> np.ndarray:
        """The additive bias: the mask (bool -> 0/-inf, padded to the KV length) and causality."""
        zero, ninf = dtype.type(0), dtype.type(-np.inf)
        if mask is not None and mask.shape[-1] < kv_len:
            fill = False if mask.dtype == np.bool_ else -np.inf
            widths = [(0, 0)] * (mask.ndim - 1) + [(0, kv_len - mask.shape[-1])]
            mask = np.pad(mask, widths, mode="constant", constant_values=fill)
        if mask is not None and mask.dtype == np.bool_:
            mask = np.where(mask, zero, ninf)
        bias = np.zeros((q_len, kv_len), dtype=dtype) if mask is None else (mask.astype(dtype) + zero)
        if int(self.attr("is_causal", 0)):
            allowed = np.arange(kv_len)[None, :] <= np.arange(q_len)[:, None] + past
            bias = bias + np.where(allowed, zero, ninf)
        return bias
