import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._quant_util import centered, exact_int32
from onnxplug.providers.numpy.registry import op


@op("MatMulInteger")
class MatMulInteger(NumpyKernel):
    """(A - a_zero_point) @ (B - b_zero_point) in int32; a 1-D a_zero_point is per row of A."""

    def compute(self, a, b, a_zero_point=None, b_zero_point=None):
        row = a.ndim - 2 if a.ndim >= 2 else 0
        return exact_int32(np.matmul(centered(a, a_zero_point, a.shape[row], row), centered(b, b_zero_point)))
