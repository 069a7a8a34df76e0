"""com.microsoft MatMulInteger16: A @ B of 16-bit integers, int32 result (uint32 when both are uint16),
exact: products summed in int64 and wrapped to 32 bits as onnxruntime's int32 accumulator does."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("MatMulInteger16", domain=DOMAIN)
class MatMulInteger16(NumpyKernel):
    def compute(self, a, b):
        out = np.uint32 if a.dtype == np.uint16 and b.dtype == np.uint16 else np.int32
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(out)
