import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import constant_inputs
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix, integer_product, requantize
from onnxplug.providers.numpy.registry import op


@op("QLinearMatMul")
class QLinearMatMul(NumpyKernel):
    """Integer matmul of the centred inputs, requantised with a_scale * b_scale / y_scale."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.prepared = IntegerMatrix(constant_inputs(node, context, (3, 5)))

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point=None):
        row = a.ndim - 2 if a.ndim >= 2 else 0
        acc = integer_product(a, a_zero_point, b, b_zero_point, self.prepared, np.matmul, row)
        scales = [np.asarray(s, dtype=np.float32) for s in (a_scale, b_scale, y_scale)]
        if scales[0].ndim == 1 and scales[0].size > 1 and a.ndim >= 2:
            scales[0] = scales[0].reshape(-1, 1)
        out_dtype = y_zero_point.dtype if y_zero_point is not None else a.dtype
        return requantize(acc, scales[0] * scales[1] / scales[2], y_zero_point, out_dtype)
