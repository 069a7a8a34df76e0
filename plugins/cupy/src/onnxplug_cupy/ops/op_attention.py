"""The project's MultiHeadAttention (com.onnxplug, docs/fused-ops.md): softmax(Q K^T * scale + bias) V
per head, as two batched cuBLAS GEMMs around a softmax."""

from __future__ import annotations

import math
from typing import Any

from onnxplug_sdk import GraphView, Node
from onnxplug_sdk.contrib import attention_broadcast, attention_broadcasts

from onnxplug_cupy.codegen.expressions import FUSED_DOMAIN
from onnxplug_cupy.ops._base import FLOAT, CupyKernel, dtypes_in
from onnxplug_cupy.ops.op_norm import softmax
from onnxplug_cupy.provider import CupyProvider


@CupyProvider.kernel("MultiHeadAttention", domain=FUSED_DOMAIN)
class MultiHeadAttention(CupyKernel):
    """query [B, S, H*Dh], key/value [B, L, H*Dh(v)], optional additive bias broadcasting to
    [B, H, S, L]; output [B, S, H*Dh(v)]."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        heads = node.attr("num_heads", None)
        if heads is None or int(heads) <= 0:
            return False
        names = [n for n in [*node.inputs, *node.outputs] if n]
        return dtypes_in(view, names, FLOAT) and len({view.dtype_of(n) for n in names}) == 1

    def run(self, query: Any, key: Any, value: Any, bias: Any = None) -> Any:
        xp = self.xp
        heads = int(self.attr("num_heads"))
        batch, seq, width = query.shape
        length = key.shape[1]
        head_size = width // heads
        scale = self.attr("scale", None)
        scale = 1.0 / math.sqrt(head_size) if scale is None else float(scale)
        if attention_broadcasts(query, key, value, bias, heads):
            return attention_broadcast(xp, query, key, value, bias, heads, scale)
        q = (query * query.dtype.type(scale)).reshape(batch, seq, heads, head_size).transpose(0, 2, 1, 3)
        k = key.reshape(batch, length, heads, head_size).transpose(0, 2, 3, 1)
        v = value.reshape(batch, length, heads, value.shape[2] // heads).transpose(0, 2, 1, 3)
        scores = xp.matmul(q, k)  # (B, H, S, L)
        if bias is not None:
            scores = scores + bias
        context = xp.matmul(softmax(xp, scores, -1, False), v)  # (B, H, S, Dv)
        return xp.ascontiguousarray(context.transpose(0, 2, 1, 3)).reshape(batch, seq, -1)
