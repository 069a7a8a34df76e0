"""com.microsoft Attention: self-attention with the Q, K, V projections in one weight matrix.

input [B, S, Din] @ weights [Din, Dq + Dk + Dv] (+ bias) splits into Q, K, V (qkv_hidden_sizes, or
three equal parts), num_heads heads each; past [2, B, N, P, H] is prepended to K and V, and present
[2, B, N, P + S, H] returned. Masks: mask_index (see _attention.mask_bias), unidirectional,
attention_bias [B|1, N|1, S, T]. do_rotary and past_present_share_buffer are refused."""

import math

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import mask_bias
from onnxplug.providers.numpy.ops.com_microsoft._attention import attend, merge_heads, split_heads
from onnxplug.providers.numpy.registry import op


@op("Attention", domain=DOMAIN)
class Attention(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        for name in ("do_rotary", "past_present_share_buffer"):
            if self.attr(name, 0):
                raise NotImplementedOpError(f"{node.describe()}: attribute {name}=1 is not supported")
        self.heads = int(self.attr("num_heads", 0))
        if self.heads <= 0:
            raise ValueError(f"{node.describe()}: num_heads must be positive")

    def compute(self, x, weights, bias=None, mask_index=None, past=None, attention_bias=None,
                past_sequence_length=None):
        qkv = matmul(x, weights)
        if bias is not None:
            qkv = qkv + bias
        return self.attention(qkv, mask_index, past, attention_bias)

    def attention(self, qkv, mask_index, past, attention_bias):
        """Everything after the projection (also QAttention's): qkv is [B, S, Dq + Dk + Dv]."""
        batch, seq, width = qkv.shape
        sizes = [int(s) for s in self.attr("qkv_hidden_sizes", None) or [width // 3] * 3]
        if sum(sizes) != width or any(s % self.heads for s in sizes) or sizes[0] != sizes[1]:
            raise ValueError(f"{self.node.describe()}: qkv_hidden_sizes {sizes} do not fit weights of "
                             f"{width} columns and {self.heads} heads")
        q, k, v = (split_heads(part, self.heads) for part in np.split(qkv, np.cumsum(sizes)[:2], axis=-1))
        past_len = 0
        if past is not None:
            if past.shape[0] != 2 or sizes[1] != sizes[2]:
                raise ValueError(f"{self.node.describe()}: past must be [2, B, N, P, H] with equal K and V sizes")
            past_len = past.shape[3]
            k, v = np.concatenate((past[0], k), axis=2), np.concatenate((past[1], v), axis=2)
        additive = mask_bias(self, mask_index, batch, seq, past_len + seq, bool(self.attr("unidirectional", 0)),
                             float(self.attr("mask_filter_value", -10000.0)), np.dtype(np.float32))
        if attention_bias is not None:
            additive = attention_bias if additive is None else additive + attention_bias
        scale = self.attr("scale", None)
        scale = 1.0 / math.sqrt(sizes[0] // self.heads) if not scale else float(scale)
        out = merge_heads(attend(q, k, v, additive, scale))
        if len(self.node.outputs) < 2 or not self.node.outputs[1]:
            return out
        if k.shape != v.shape:
            raise ValueError(f"{self.node.describe()}: present needs equal K and V hidden sizes, got {sizes}")
        return out, np.stack((k, v))
