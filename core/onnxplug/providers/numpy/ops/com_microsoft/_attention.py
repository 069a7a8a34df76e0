"""Masks and the attention product shared by com.microsoft Attention, MultiHeadAttention and
GroupQueryAttention, following onnxruntime's CPU kernels (attention_cpu_base.h): a masked key gets
``mask_filter_value`` (not -inf), a key after the query's causal position the float's lowest value,
both added to the scaled scores with any attention_bias; softmax is per row, shifted by its maximum."""

from __future__ import annotations

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.runtime.blas import matmul


def mask_bias(kernel, mask: np.ndarray | None, batch: int, seq: int, total: int, causal: bool,
              filter_value: float, dtype: np.dtype) -> np.ndarray | None:
    """The additive mask, [B, 1, S, T] for T keys (the last S of them aligned with the queries when
    causal), or None when nothing is masked.

    ``mask`` is a key padding mask: [B] end positions, [2B] end then start positions, [B, T] or
    [B, S, T] of 1 (attend) / 0 (masked)."""
    past = total - seq
    lowest = np.finfo(dtype).min
    if mask is None and not causal:
        return None
    bias = np.zeros((batch, 1, seq, total), dtype=dtype)
    if mask is not None:
        keys = np.arange(total)
        if mask.ndim == 1 and mask.shape[0] in (batch, 2 * batch):
            end = mask[:batch].astype(np.int64).reshape(batch, 1, 1, 1)
            masked = keys >= end
            if mask.shape[0] == 2 * batch:
                start = np.minimum(mask[batch:].astype(np.int64), total).reshape(batch, 1, 1, 1)
                masked = masked | (keys < start)
            masked = np.broadcast_to(masked, bias.shape)
        elif mask.ndim == 2 and mask.shape == (batch, total):
            masked = np.broadcast_to((mask <= 0).reshape(batch, 1, 1, total), bias.shape)
        elif mask.ndim == 3 and mask.shape == (batch, seq, total):
            masked = (mask <= 0).reshape(batch, 1, seq, total)
        elif mask.ndim == 4:
            raise NotImplementedOpError(f"{kernel.node.describe()}: a 4-D mask is not supported "
                                        "(onnxruntime's CPU kernel has none either)")
        else:
            raise ValueError(f"{kernel.node.describe()}: mask shape {list(mask.shape)} is none of [B], [2B], "
                             f"[B, T], [B, S, T] for B={batch}, S={seq}, T={total}")
        bias[masked] = dtype.type(filter_value)
    if causal:
        future = np.arange(total)[None, :] > np.arange(seq)[:, None] + past
        bias[:, :, future] = lowest
    return bias


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
