"""com.microsoft DynamicQuantizeMatMul: A (float) quantized to uint8 per tensor as DynamicQuantizeLinear
does, then MatMulIntegerToFloat with B's scale and zero point (per tensor or per column) and bias."""

import numpy as np

from onnxplug.providers.numpy.kernels.conv.dispatch import constant_inputs
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._integer import integer_matmul_to_float
from onnxplug.providers.numpy.ops.ai_onnx.op_dynamic_quantize_linear import dynamic_quantize
from onnxplug.providers.numpy.registry import op


@op("DynamicQuantizeMatMul", domain=DOMAIN)
class DynamicQuantizeMatMul(NumpyKernel):
    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.prepared = IntegerMatrix(constant_inputs(node, context, (1, 3)))

    def compute(self, a, b, b_scale, b_zero_point=None, bias=None):
        qa, a_scale, a_zero_point = dynamic_quantize(a)
        return integer_matmul_to_float(self, qa, b, a_scale, b_scale, a_zero_point, b_zero_point, bias, np.float32,
                                       self.prepared)
