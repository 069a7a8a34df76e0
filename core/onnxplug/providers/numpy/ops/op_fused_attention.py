"""com.onnxplug MultiHeadAttention (docs/fused-ops.md): softmax(Q K^T * scale + bias) V per head."""

from __future__ import annotations

import math

import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("MultiHeadAttention", domain="com.onnxplug")
class MultiHeadAttention(NumpyKernel):
    """query [B, S, H*Dh], key/value [B, L, H*Dh(v)], optional additive bias broadcasting to
    [B, H, S, L]; output [B, S, H*Dh(v)]."""

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray,
                bias: np.ndarray | None = None) -> np.ndarray:
        heads = int(self.attr("num_heads"))
        batch, seq, width = query.shape
        length = key.shape[1]
        head_size = width // heads
        scale = self.attr("scale")
        scale = 1.0 / math.sqrt(head_size) if scale is None else float(scale)
        # Scaling Q (S x D values) is cheaper than scaling the scores (S x L per head).
        q = (query * query.dtype.type(scale)).reshape(batch, seq, heads, head_size).transpose(0, 2, 1, 3)
        k = key.reshape(batch, length, heads, head_size).transpose(0, 2, 3, 1)
        v = value.reshape(batch, length, heads, value.shape[2] // heads).transpose(0, 2, 1, 3)
        scores = matmul(q, k)
        if bias is not None:
            scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = matmul(scores, v)
        return np.ascontiguousarray(context.transpose(0, 2, 1, 3)).reshape(batch, seq, -1).astype(
            query.dtype, copy=False)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return node.attr("num_heads") is not None and int(node.attr("num_heads")) > 0
