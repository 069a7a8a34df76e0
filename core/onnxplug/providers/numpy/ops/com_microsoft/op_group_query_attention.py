"""com.microsoft GroupQueryAttention: causal attention with num_heads query heads sharing
kv_num_heads key/value heads, a KV cache and per-row lengths, as onnxruntime's CPU kernel runs it.

query [B, S, N * H] (key, value [B, S, Nkv * H]) or Q, K, V packed along the last axis. seqlens_k
[B] is each row's total length - 1; a first prompt (S equal to total_sequence_length) has no past,
otherwise row b's past is its first seqlens_k[b] + 1 - S cached positions. present_key /
present_value [B, Nkv, T, H] hold the past then the new keys, zeros after. Query s of row b attends
to keys [0, past + s] (the last local_window_size with a window), scores scaled, softcapped,
softmax (smooth_softmax: an extra zero logit); do_rotary rotates Q and K at their positions.
position_ids, attention_bias, head_sink and the qk output are refused; a prompt's padded rows have
no defined output in onnxruntime and get the causal one here.
"""

import math

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._attention import merge_heads, split_heads
from onnxplug.providers.numpy.registry import op

#: Optional inputs of later onnxruntime versions this kernel does not implement, by position.
_REFUSED_INPUTS = {9: "position_ids", 10: "attention_bias", 11: "head_sink"}


def _rotate(t: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool) -> np.ndarray:
    """Rotary embedding of [B, N, S, H] at per-row positions: cos / sin [B, 1, S, rot / 2]."""
    half = cos.shape[-1]
    out = t.astype(np.float32)
    if interleaved:
        x1, x2 = out[..., 0:2 * half:2].copy(), out[..., 1:2 * half:2].copy()
        out[..., 0:2 * half:2] = x1 * cos - x2 * sin
        out[..., 1:2 * half:2] = x1 * sin + x2 * cos
    else:
        x1, x2 = out[..., :half].copy(), out[..., half:2 * half].copy()
        out[..., :half] = x1 * cos - x2 * sin
        out[..., half:2 * half] = x1 * sin + x2 * cos
    return out.astype(t.dtype)


@op("GroupQueryAttention", domain=DOMAIN)
class GroupQueryAttention(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.heads, self.kv_heads = int(self.attr("num_heads", 0)), int(self.attr("kv_num_heads", 0))
        if self.heads <= 0 or self.kv_heads <= 0 or self.heads % self.kv_heads:
            raise ValueError(f"{node.describe()}: num_heads must be a positive multiple of kv_num_heads")
        for position, name in _REFUSED_INPUTS.items():
            if len(node.inputs) > position and node.inputs[position]:
                raise NotImplementedOpError(f"{node.describe()}: input {name} is not supported")
        if len(node.outputs) > 3 and node.outputs[3]:
            raise NotImplementedOpError(f"{node.describe()}: the output_qk output is not supported")
        if self.attr("qk_output", 0):
            raise NotImplementedOpError(f"{node.describe()}: attribute qk_output is not supported")

    def compute(self, query, key=None, value=None, past_key=None, past_value=None, seqlens_k=None,
                total_sequence_length=None, cos_cache=None, sin_cache=None, *refused):
        if seqlens_k is None or total_sequence_length is None:
            raise ValueError(f"{self.node.describe()}: seqlens_k and total_sequence_length are required")
        batch, seq, _ = query.shape
        heads, kv_heads = self.heads, self.kv_heads
        if key is None:  # packed Q, K, V
            head_size = query.shape[2] // (heads + 2 * kv_heads)
            query, key, value = np.split(query, [heads * head_size, (heads + kv_heads) * head_size], axis=-1)
        head_size = query.shape[2] // heads
        q, k, v = split_heads(query, heads), split_heads(key, kv_heads), split_heads(value, kv_heads)
        total = int(np.asarray(total_sequence_length).reshape(()))
        lengths = seqlens_k.astype(np.int64).reshape(-1) + 1
        past_buffer = 0 if past_key is None else past_key.shape[2]
        prompt = seq == total
        past_lens = np.zeros(batch, np.int64) if prompt else lengths - seq
        if not prompt and (past_lens.min() < 0 or past_lens.max() > past_buffer):
            raise ValueError(f"{self.node.describe()}: seqlens_k {seqlens_k.tolist()} do not fit {seq} new tokens "
                             f"after a past of {past_buffer}")
        if self.attr("do_rotary", 0):
            if cos_cache is None or sin_cache is None:
                raise ValueError(f"{self.node.describe()}: do_rotary needs cos_cache and sin_cache")
            positions = past_lens[:, None] + np.arange(seq)[None, :]
            cos, sin = cos_cache[positions][:, None], sin_cache[positions][:, None]
            interleaved = bool(self.attr("rotary_interleaved", 0))
            q, k = _rotate(q, cos, sin, interleaved), _rotate(k, cos, sin, interleaved)
        present_len = max(past_buffer, total)
        present_k = np.zeros((batch, kv_heads, present_len, head_size), query.dtype)
        present_v = np.zeros_like(present_k)
        for b in range(batch):
            p = int(past_lens[b])
            if p:
                present_k[b, :, :p], present_v[b, :, :p] = past_key[b, :, :p], past_value[b, :, :p]
            present_k[b, :, p:p + seq], present_v[b, :, p:p + seq] = k[b], v[b]
        out = self._attend(q, present_k, present_v, past_lens)
        return merge_heads(out).astype(query.dtype), present_k, present_v

    def _attend(self, q, keys, values, past_lens) -> np.ndarray:
        group = self.heads // self.kv_heads
        keys = np.repeat(keys, group, axis=1).astype(np.float32)
        values = np.repeat(values, group, axis=1).astype(np.float32)
        scale = float(self.attr("scale", 0.0)) or 1.0 / math.sqrt(q.shape[-1])
        scores = np.matmul(q.astype(np.float32), keys.transpose(0, 1, 3, 2)) * np.float32(scale)
        softcap = float(self.attr("softcap", 0.0))
        if softcap > 0:
            scores = np.float32(softcap) * np.tanh(scores / np.float32(softcap))
        seq, length = q.shape[2], keys.shape[2]
        last = past_lens[:, None] + np.arange(seq)[None, :]  # [B, S]: the last key each query sees
        cols = np.arange(length)
        allowed = cols[None, None, :] <= last[:, :, None]
        window = int(self.attr("local_window_size", -1))
        if window > 0:
            allowed &= cols[None, None, :] > last[:, :, None] - window
        allowed = allowed[:, None]  # [B, 1, S, T]
        scores = np.where(allowed, scores, -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        if self.attr("smooth_softmax", 0):
            top = np.maximum(top, 0)
        e = np.exp(scores - top)
        total = e.sum(axis=-1, keepdims=True)
        if self.attr("smooth_softmax", 0):
            total += np.exp(-top)
        return np.matmul(e / total, values)
