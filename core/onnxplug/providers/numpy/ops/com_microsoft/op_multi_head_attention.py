"""com.microsoft MultiHeadAttention: attention of projected queries over projected keys and values.

query [B, S, D]; key and value [B, L, D] / [B, L, Dv] (then the bias's K and V parts apply and
past_key / past_value [B, N, P, H] are prepended) or already split in heads [B, N, L, H] (used
as they are); key packed with value [B, L, N, 2, H] (value absent). bias [D + D + Dv];
key_padding_mask [B] (end positions), [B, T] or [B, S, T]; attention_bias [B|1, N|1, S, T]; unidirectional.
Outputs: output [B, S, Dv], present_key and present_value [B, N, T, H]. A query packed with key
and value and the qk output are refused."""

import math

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import mask_bias
from onnxplug.providers.numpy.ops.com_microsoft._attention import attend, merge_heads, split_heads
from onnxplug.providers.numpy.registry import op


@op("MultiHeadAttention", domain=DOMAIN)
class MultiHeadAttention(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.heads = int(self.attr("num_heads", 0))
        if self.heads <= 0:
            raise ValueError(f"{node.describe()}: num_heads must be positive")
        if len(node.outputs) > 3 and node.outputs[3]:
            raise NotImplementedOpError(f"{node.describe()}: the qk output is not supported")
        if len(node.inputs) > 9 and node.inputs[9]:
            raise NotImplementedOpError(f"{node.describe()}: input cache_indirection is not supported")

    def compute(self, query, key=None, value=None, bias=None, key_padding_mask=None, attention_bias=None,
                past_key=None, past_value=None, past_sequence_length=None, cache_indirection=None):
        heads = self.heads
        if query.ndim != 3 or key is None:
            raise NotImplementedOpError(f"{self.node.describe()}: a query packed with key and value is not supported")
        batch, seq, width = query.shape
        bq = bk = bv = None
        if bias is not None:
            bq, bk, bv = bias[:width], bias[width:2 * width], bias[2 * width:]
        q = split_heads(query if bq is None else query + bq, heads)
        if key.ndim == 5:  # packed [B, L, N, 2, H]
            if value is not None:
                raise ValueError(f"{self.node.describe()}: value must be absent when key packs key and value")
            k, v = key[:, :, :, 0].transpose(0, 2, 1, 3), key[:, :, :, 1].transpose(0, 2, 1, 3)
            if bk is not None:
                k = k + bk.reshape(heads, 1, -1)
                v = v + bv.reshape(heads, 1, -1)
        elif key.ndim == 4:  # already projected and split in heads
            k, v = key, value
        elif key.ndim == 3:
            k = split_heads(key if bk is None else key + bk, heads)
            v = split_heads(value if bv is None else value + bv, heads)
        else:
            raise ValueError(f"{self.node.describe()}: key of rank {key.ndim} is none of 3, 4, 5")
        if past_key is not None and key.ndim != 4:
            k = np.concatenate((past_key, k), axis=2)
            v = np.concatenate((past_value, v), axis=2)
        total = k.shape[2]
        if key_padding_mask is not None and key_padding_mask.ndim == 1 and key_padding_mask.shape[0] != batch:
            raise ValueError(f"{self.node.describe()}: a 1-D key_padding_mask must be [B] end positions, "
                             f"got shape {list(key_padding_mask.shape)}")
        additive = mask_bias(self, key_padding_mask, batch, seq, total, bool(self.attr("unidirectional", 0)),
                             float(self.attr("mask_filter_value", -10000.0)), np.dtype(np.float32))
        if attention_bias is not None:
            additive = attention_bias if additive is None else additive + attention_bias
        scale = self.attr("scale", None)
        scale = 1.0 / math.sqrt(q.shape[-1]) if not scale else float(scale)
        out = merge_heads(attend(q, k, v, additive, scale))
        return out, np.ascontiguousarray(k), np.ascontiguousarray(v)
