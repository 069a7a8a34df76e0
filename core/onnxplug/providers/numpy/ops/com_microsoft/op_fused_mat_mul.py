"""com.microsoft FusedMatMul (onnxruntime's session fuses a MatMul with a scale or transposes into
it) and TransposeMatMul, its older name: Y = alpha * A' @ B' with MatMul broadcasting. transA /
transB swap the last two axes; transBatchA / transBatchB first move axis 0 of a rank >= 3
operand next to the last ([d0, d1, ..., dn-1] -> [d1, ..., d0, dn-1]), as onnxruntime does.
Unlike the project's com.onnxplug FusedMatMul it has no activation."""

import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("TransposeMatMul", domain=DOMAIN)
@op("FusedMatMul", domain=DOMAIN)
class FusedMatMul(NumpyKernel):
    def compute(self, a, b):
        a = self._operand(a, "A")
        b = self._operand(b, "B")
        y = matmul(a, b)
        alpha = float(self.attr("alpha", 1.0))
        if alpha != 1.0:
            y = y * y.dtype.type(alpha)
        return np.asarray(y, dtype=a.dtype)

    def _operand(self, x: np.ndarray, name: str) -> np.ndarray:
        if self.attr(f"transBatch{name}", 0) and x.ndim >= 3:
            x = np.moveaxis(x, 0, -2)
        if self.attr(f"trans{name}", 0):
            if x.ndim < 2:
                raise ValueError(f"{self.node.describe()}: trans{name} needs a matrix, got shape {list(x.shape)}")
            x = np.swapaxes(x, -1, -2)
        return x
