"""com.microsoft QAttention (onnxruntime's quantization tool's fused attention): the Q, K, V
projection as MatMulIntegerToFloat with its bias (ops/op_integer_matmul.py), then self-attention
compiled (kernels/int_attention.py) under the numpy provider's additive mask (its ``mask_bias``:
mask_index as end positions, or per key, and unidirectional).

Declined: past and present, qkv_hidden_sizes with unequal parts, do_rotary, scales other than
float32. The images go to the session's threads from ``THREADED_MIN_MACS`` multiply-adds.
"""

from __future__ import annotations

import math

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node
from onnxplug_sdk.contrib import mask_bias

from onnxplug_numba.kernels import int_attention
from onnxplug_numba.kernels import int_matmul as kim
from onnxplug_numba.ops.op_integer_matmul import (
    _F32,
    _I8,
    _ZERO,
    _check,
    _IntegerProduct,
)
from onnxplug_numba.provider import NumbaProvider

#: Multiply-adds of the attention from which its images are shared over the threads (as
#: op_integer_matmul.THREADED_MIN_MACS).
THREADED_MIN_MACS = 1 << 27
_NO_BIAS4 = np.zeros((1, 1, 1, 1), np.float32)
_NO_ENDS = np.zeros(1, np.int32)


@NumbaProvider.kernel("QAttention", domain="com.microsoft")
class QAttention(_IntegerProduct):
    B, B_ZP = 1, 7

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _check(node, view, (0, 1, 6, 7), (2, 3, 4), 1)
        if found is not True:
            return found
        if len(node.inputs) > 8 and node.inputs[8]:
            return Decline("attribute", "past is not computed")
        if len(node.outputs) > 1 and node.outputs[1]:
            return Decline("attribute", "present is not computed")
        if node.attr("do_rotary", 0) or node.attr("past_present_share_buffer", 0):
            return Decline("attribute", "do_rotary and past_present_share_buffer are not computed")
        sizes = node.attr("qkv_hidden_sizes")
        if sizes is not None and len({int(s) for s in sizes}) != 1:
            return Decline("attribute", f"qkv_hidden_sizes {list(sizes)} are not three equal parts")
        if int(node.attr("num_heads", 0)) <= 0:
            return Decline("attribute", "num_heads must be positive")
        if len(node.inputs) > 5 and node.inputs[5] and view.dtype_of(node.inputs[5]) != np.dtype(np.int32):
            return Decline("dtype", f"mask_index {node.inputs[5]!r} is not int32")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.heads = int(self.attr("num_heads"))
        self.causal = bool(self.attr("unidirectional", 0))
        self.filter_value = float(self.attr("mask_filter_value", -10000.0))
        self.scale = self.attr("scale", None)

    def compute(self, x, weight, bias, input_scale, weight_scale, mask_index=None,  # type: ignore[no-untyped-def]
                input_zero_point=None, weight_zero_point=None, past=None):
        if x.ndim != 3 or weight.ndim != 2 or weight.shape[1] % 3 or (weight.shape[1] // 3) % self.heads:
            raise ValueError(f"{self.node.describe()}: input {list(x.shape)} and weight {list(weight.shape)} do not "
                             f"fit {self.heads} heads of Q, K and V")
        if input_scale.size != 1 or (input_zero_point is not None and input_zero_point.size != 1):
            raise ValueError(f"{self.node.describe()}: input_scale and input_zero_point must be per tensor")
        batch, seq, width = x.shape[0], x.shape[1], weight.shape[1] // 3
        scale = np.float32(1.0 / math.sqrt(width // self.heads) if not self.scale else float(self.scale))
        ends = starts = _NO_ENDS
        additive, has_ends = _NO_BIAS4, False
        if mask_index is not None and mask_index.ndim == 1 and mask_index.shape[0] in (batch, 2 * batch):
            ends, has_ends = mask_index[:batch], True
            starts = mask_index[batch:] if mask_index.shape[0] == 2 * batch else np.zeros(batch, np.int32)
        elif mask_index is not None:
            additive = mask_bias(self, mask_index, batch, seq, seq, self.causal, self.filter_value, _F32)
        has_bias = additive is not _NO_BIAS4
        out = np.empty((batch, seq, width), np.float32)
        macs = 2 * batch * seq * seq * width
        w = self._one_call(x, weight)
        if w is not None and not (self.threads.parallel and macs >= THREADED_MIN_MACS) and \
                (weight_scale.size == 1 or weight_scale.size == 3 * width):
            azp = _ZERO if input_zero_point is None else input_zero_point.reshape(-1)
            int_attention.projected(x, 128 if x.dtype == _I8 else 0, azp, *w, input_scale.reshape(-1),
                                    weight_scale.reshape(-1), bias.reshape(-1), self.heads, scale, additive, has_bias,
                                    ends, starts, has_ends, np.float32(self.filter_value), self.causal, out)
            return out
        qkv = self._product(x, input_zero_point, weight, weight_zero_point, kim.FLOAT, _F32, input_scale,
                            weight_scale, bias=bias.reshape(-1))

        def images(lo: int, hi: int) -> None:
            int_attention.attend(qkv, self.heads, scale, additive, has_bias, ends, starts, has_ends,
                                 np.float32(self.filter_value), self.causal, lo, hi, out)

        if self.threads.parallel and macs >= THREADED_MIN_MACS and batch > 1:
            self.threads.run(images, batch)
        else:
            images(0, batch)
        return out
