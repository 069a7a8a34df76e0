import numpy as np
from onnxplug.providers.numpy.runtime.blas import matmul
from onnx import helper

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


def _split_heads(t: np.ndarray, heads: int) -> np.ndarray:
    """(B, S, heads * D) -> (B, heads, S, D)."""
    b, s, hidden = t.shape
    return t.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def _as_bias(mask: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A boolean mask (True attends) as an additive 0 / -inf bias; numeric masks unchanged."""
    if mask.dtype == np.bool_:
        return np.where(mask, dtype.type(0), dtype.type(-np.inf))
    return mask.astype(dtype, copy=False)


def _window(q_len: int, kv_len: int, offset, left: int, right: int, causal: bool) -> np.ndarray:
    """Allowed (query, key) pairs for a causal and/or sliding window aligned at ``offset``.

    ``offset`` is a scalar or a per-batch (B,) array; the result is (q, kv) or (B, 1, q, kv).
    """
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    per_batch = np.ndim(offset) > 0
    pos = i + (np.reshape(offset, (-1, 1, 1)) if per_batch else int(offset))
    allowed = np.ones(np.broadcast_shapes(pos.shape, j.shape), dtype=bool)
    if causal:
        allowed &= j <= pos
    if left >= 0:
        allowed &= pos - j <= left
    if right >= 0:
        allowed &= j - pos <= right
    return allowed[:, None] if per_batch else allowed


@op("Attention")
class Attention(NumpyKernel):
    """Scaled dot-product attention (opset 23-25): masks, causal and sliding windows, KV cache,
    grouped-query heads, softcap, softmax precision and the qk_matmul_output modes."""

    def compute(self, q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None):
        three_d = q.ndim == 3
        if three_d:
            qh, kvh = int(self.attr("q_num_heads", 0)), int(self.attr("kv_num_heads", 0))
            if qh <= 0 or kvh <= 0:
                raise ValueError(f"{self.node.describe()}: 3-D inputs need q_num_heads and kv_num_heads")
            q, k, v = _split_heads(q, qh), _split_heads(k, kvh), _split_heads(v, kvh)
        dtype = q.dtype
        scale = self.attr("scale", None)
        scale = 1 / np.sqrt(q.shape[3]) if scale is None else float(scale)
        root = dtype.type(np.sqrt(scale))  # applied to both Q and K, as the ONNX function does
        if past_key is not None:
            k = np.concatenate((past_key, k), axis=2)
            v = np.concatenate((past_value, v), axis=2)
        present_k, present_v = k, v
        q_len, kv_len = q.shape[2], k.shape[2]
        bias = self._bias(attn_mask, past_key, nonpad_kv_seqlen, q.shape[0], q_len, kv_len, dtype)
        if k.shape[1] != q.shape[1]:  # grouped-query attention: each KV head serves a run of Q heads
            reps = q.shape[1] // k.shape[1]
            k, v = np.repeat(k, reps, axis=1), np.repeat(v, reps, axis=1)
        scores = matmul(q * root, (k * root).transpose(0, 1, 3, 2))
        softcap = float(self.attr("softcap", 0.0))
        if softcap > 0:
            scores = np.tanh(scores / dtype.type(softcap)) * dtype.type(softcap)
        mode = int(self.attr("qk_matmul_output_mode", 0))
        qk_out = scores
        biased = scores + bias
        if mode == 2:
            qk_out = biased
        precision = self.attr("softmax_precision", None)
        if precision is not None:
            biased = biased.astype(helper.tensor_dtype_to_np_dtype(int(precision)))
        probs = self._softmax(biased)
        masked_rows = np.isneginf(np.max(bias, axis=-1, keepdims=True))
        if masked_rows.any():
            probs = np.where(masked_rows, probs.dtype.type(0), probs)
        if mode == 3:
            qk_out = probs
        y = matmul(probs.astype(dtype, copy=False), v).astype(dtype, copy=False)
        if three_d:
            y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
        return y, present_k, present_v, qk_out.astype(dtype, copy=False)

    def _bias(self, mask, past_key, nonpad, batch, q_len, kv_len, dtype):
        """The additive bias: mask (padded to kv_len), causal / window limits, KV padding."""
        causal = bool(self.attr("is_causal", 0))
        left = int(self.attr("left_window_size", -1))
        right = int(self.attr("right_window_size", -1))
        bias = np.zeros((q_len, kv_len), dtype=dtype)
        if mask is not None:
            short = kv_len - mask.shape[-1]
            if short > 0:
                fill = False if mask.dtype == np.bool_ else -np.inf
                mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, short)], constant_values=fill)
            bias = bias + _as_bias(mask, dtype)
        if causal or left >= 0 or right >= 0:
            if past_key is None and nonpad is not None:
                offset = np.asarray(nonpad).reshape(-1) - q_len
            else:
                offset = past_key.shape[2] if past_key is not None else 0
            allowed = _window(q_len, kv_len, offset, left, right, causal)
            bias = bias + np.where(allowed, dtype.type(0), dtype.type(-np.inf))
        if nonpad is not None:
            keep = np.arange(kv_len)[None, :] < np.asarray(nonpad).reshape(-1, 1)
            bias = bias + np.where(keep, dtype.type(0), dtype.type(-np.inf)).reshape(batch, 1, 1, kv_len)
        return bias

    @staticmethod
    def _softmax(x):
        top = np.max(x, axis=-1, keepdims=True)
        top = np.where(np.isneginf(top), x.dtype.type(0), top)  # fully masked rows: no NaN
        e = np.exp(x - top)
        total = np.sum(e, axis=-1, keepdims=True)
        return e / np.where(total == 0, x.dtype.type(1), total)
