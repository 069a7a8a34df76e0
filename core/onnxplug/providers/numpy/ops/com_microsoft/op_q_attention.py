"""com.microsoft QAttention: Attention whose projection is an integer product, as the quantization
tool writes it: qkv = (input - input_zero_point) @ (weight - weight_zero_point) * input_scale *
weight_scale + bias (weight_scale and weight_zero_point per tensor or per column), then
Attention's masks, past and present (com.microsoft Attention's kernel)."""

import numpy as np

from onnxplug.providers.numpy.kernels.conv.dispatch import constant_inputs
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._integer import integer_matmul_to_float
from onnxplug.providers.numpy.ops.com_microsoft.op_attention import Attention
from onnxplug.providers.numpy.registry import op


@op("QAttention", domain=DOMAIN)
class QAttention(Attention):
    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.prepared = IntegerMatrix(constant_inputs(node, context, (1, 7)))

    def compute(self, x, weight, bias, input_scale, weight_scale, mask_index=None, input_zero_point=None,
                weight_zero_point=None, past=None):
        qkv = integer_matmul_to_float(self, x, weight, input_scale, weight_scale, input_zero_point,
                                      weight_zero_point, bias, np.float32, self.prepared)
        return self.attention(qkv, mask_index, past, None)
