"""com.microsoft MatMulIntegerToFloat: (A - a_zero_point) @ (B - b_zero_point) * a_scale * b_scale
(+ bias), A and B 8-bit, output the scales' float type; b_scale, b_zero_point per tensor or per column."""

from onnxplug.providers.numpy.kernels.conv.dispatch import constant_inputs
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix
from onnxplug.providers.numpy.ops.com_microsoft._integer import integer_matmul_to_float
from onnxplug.providers.numpy.registry import op


@op("MatMulIntegerToFloat", domain=DOMAIN)
class MatMulIntegerToFloat(NumpyKernel):
    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.prepared = IntegerMatrix(constant_inputs(node, context, (1, 5)))

    def compute(self, a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
        return integer_matmul_to_float(self, a, b, a_scale, b_scale, a_zero_point, b_zero_point, bias,
                                       a_scale.dtype, self.prepared)
