import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import blas_dtype
from onnxplug.providers.numpy.registry import op


@op("Gemm")
class Gemm(NumpyKernel):
    """Y = alpha * A' @ B' + beta * C; transposes are views BLAS reads without copying."""

    def compute(self, a, b, c=None):
        out_dtype = a.dtype
        dt = blas_dtype(a.dtype)
        if dt != a.dtype:
            a, b = a.astype(dt), b.astype(dt)
            c = None if c is None else c.astype(dt)
        alpha = float(self.attr("alpha", 1.0))
        beta = float(self.attr("beta", 1.0))
        a = a.T if self.attr("transA", 0) else a
        b = b.T if self.attr("transB", 0) else b
        y = matmul(a, b)
        if alpha != 1.0:
            y *= y.dtype.type(alpha)
        if c is not None and beta != 0.0:
            y += c if beta == 1.0 else c * c.dtype.type(beta)
        return np.asarray(y, dtype=out_dtype)
