"""Masks and the attention product shared by com.microsoft Attention, MultiHeadAttention and
GroupQueryAttention, following onnxruntime's CPU kernels (attention_cpu_base.h): a masked key gets
``mask_filter_value`` (not -inf), a key after the query's causal position the float's lowest value,
both added to the scaled scores with any attention_bias; softmax is per row, shifted by its maximum."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None, scale: float) -> np.ndarray:
    """softmax(scale q k^T + bias) v for [B, N, S, D] q, [B, N, T, D] k, [B, N, T, Dv] v; [B, N, S, Dv]."""
    work = q.dtype if q.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    # contiguous operands: a product of strided head views leaves BLAS for numpy's own loop
    keys = np.ascontiguousarray(np.swapaxes(k, -1, -2), dtype=work)
    scores = matmul(np.ascontiguousarray(q, dtype=work), keys)
    scores *= work.type(scale)
    if bias is not None:
        with np.errstate(over="ignore"):  # lowest + a negative bias rounds to -inf: still weight 0
            scores += bias.astype(work, copy=False)
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return matmul(scores, np.ascontiguousarray(v, dtype=work)).astype(q.dtype, copy=False)


def split_heads(t: np.ndarray, heads: int) -> np.ndarray:
    """[B, S, N * D] -> [B, N, S, D]."""
    return t.reshape(t.shape[0], t.shape[1], heads, -1).transpose(0, 2, 1, 3)


def merge_heads(t: np.ndarray) -> np.ndarray:
    """[B, N, S, D] -> [B, S, N * D]."""
    return t.transpose(0, 2, 1, 3).reshape(t.shape[0], t.shape[2], -1)
