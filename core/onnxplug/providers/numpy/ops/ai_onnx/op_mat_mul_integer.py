import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import constant_inputs
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix, exact_int32, integer_product
from onnxplug.providers.numpy.registry import op


@op("MatMulInteger")
class MatMulInteger(NumpyKernel):
    """(A - a_zero_point) @ (B - b_zero_point) in int32; a 1-D a_zero_point is per row of A."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.prepared = IntegerMatrix(constant_inputs(node, context, (1, 3)))

    def compute(self, a, b, a_zero_point=None, b_zero_point=None):
        row = a.ndim - 2 if a.ndim >= 2 else 0
        return exact_int32(integer_product(a, a_zero_point, b, b_zero_point, self.prepared, np.matmul, row))
