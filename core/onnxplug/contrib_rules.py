"""Rules of onnxruntime's com.microsoft operators that more than one provider follows, kept in one
place so their results agree: the additive attention mask of Attention and its quantized and
multi-head forms (onnxruntime's attention_cpu_base.h: a masked key gets ``mask_filter_value``, a
key after a query's causal position the float's lowest value), and the per-tensor scale and zero
point reading and float32 dequantization of the QLinear ops and of QEmbedLayerNormalization's tables;
and the broadcasting form of the optimizer's com.onnxplug MultiHeadAttention. ``kernel`` arguments
name the node in errors (anything with a ``node`` that can ``describe()`` itself)."""

from __future__ import annotations

import numpy as np

from onnxplug.errors import NotImplementedOpError


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


def per_tensor(kernel, name: str, value: np.ndarray | None) -> np.ndarray | None:
    """A scale or zero point as a 0-d array; more than one value is refused."""
    if value is None:
        return None
    if value.size != 1:
        raise ValueError(f"{kernel.node.describe()}: {name} must be one value (per tensor), "
                         f"got shape {list(value.shape)}")
    return value.reshape(())


def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None) -> np.ndarray:
    """(x - zero_point) * scale in float32."""
    centered = x.astype(np.float32)
    if zero_point is not None:
        centered -= np.float32(zero_point)
    return centered * np.float32(scale)


#: QEmbedLayerNormalization's quantized inputs, in order.
EMBED_TABLES = ("word_embedding", "position_embedding", "segment_embedding", "gamma", "beta")


def dequantize_tables(kernel, quantized: list, scales: list, zero_points: list) -> list:
    """QEmbedLayerNormalization's tables, gamma and beta in float32 (None where not given), each
    ``(q - zero_point) * scale`` with its per-tensor scale and zero point."""
    tables: list = []
    for name, q, scale, zero_point in zip(EMBED_TABLES, quantized, scales, zero_points):
        if q is None:
            tables.append(None)
            continue
        if scale is None:
            raise ValueError(f"{kernel.node.describe()}: {name} needs its scale")
        tables.append(np.ascontiguousarray(dequantize(q, per_tensor(kernel, f"{name}_scale", scale),
                                                      per_tensor(kernel, f"{name}_zero_point", zero_point)),
                                           dtype=np.float32))
    return tables


def attention_broadcasts(query, key, value, bias, heads: int) -> bool:
    """Whether com.onnxplug MultiHeadAttention's operands leave its plain form: query ``[B, S, D]``,
    key and value ``[B, L, D]`` and ``[B, L, Dv]``, a bias broadcasting onto the ``[B, H, S, L]``
    scores without enlarging them. The optimizer fuses attention whose shapes it cannot prove (exports with unknown dims), so
    kernels compute the other forms by :func:`attention_broadcast`, as the unfused nodes would."""
    batch, length = query.shape[0], key.shape[1]
    if key.shape[0] != batch or value.shape[0] != batch or value.shape[1] != length:
        return True
    if bias is None:
        return False
    shape = bias.shape
    if len(shape) > 4:
        return True
    for d, t in zip(shape, (batch, heads, query.shape[1], length)[4 - len(shape):]):
        if d != 1 and d != t:
            return True
    return False


def attention_broadcast(xp, query, key, value, bias, heads: int, scale: float):
    """MultiHeadAttention as its unfused nodes compute it, with their broadcasting (batch of the
    products, bias onto the scores), in array module ``xp`` (numpy, cupy): [B', S', H*Dv]."""
    q = query.reshape(query.shape[0], query.shape[1], heads, -1).transpose(0, 2, 1, 3)
    k = key.reshape(key.shape[0], key.shape[1], heads, -1).transpose(0, 2, 3, 1)
    v = value.reshape(value.shape[0], value.shape[1], heads, -1).transpose(0, 2, 1, 3)
    scores = xp.matmul(q, k) * query.dtype.type(scale)
    if bias is not None:
        scores = scores + bias
    scores = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    out = xp.matmul(scores, v).transpose(0, 2, 1, 3)
    return xp.ascontiguousarray(out).reshape(out.shape[0], out.shape[1], -1)
