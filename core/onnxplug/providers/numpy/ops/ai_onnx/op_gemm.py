import numpy as np

from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import _BLAS_FLOATS, _NATIVE_DTYPES, blas_dtype
from onnxplug.providers.numpy.registry import op


@op("Gemm")
class Gemm(NumpyKernel):
    """Y = alpha * A' @ B' + beta * C; transposes are views BLAS reads without copying."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        # parsed once: small Gemms (a recurrent cell in a Loop body) run thousands of times
        self.alpha = float(self.attr("alpha", 1.0))
        self.beta = float(self.attr("beta", 1.0))
        self.trans_a = bool(self.attr("transA", 0))
        self.trans_b = bool(self.attr("transB", 0))
        plain = self.alpha == 1.0 and self.beta == 1.0 and not self.trans_a and not self.trans_b
        #: plain products of fewer multiply-adds than this are a.dot(b) + c (0: none are)
        self._small_macs = blas.small_product_limit() if plain else 0

    def compute(self, a, b, c=None):
        if (a.ndim == 2 and b.ndim == 2 and a.size * b.shape[1] < self._small_macs and a.dtype is b.dtype
                and a.dtype in _BLAS_FLOATS):
            # a small product (a Loop body's or a recurrent cell's, run thousands of times), which
            # blas.matmul would not thread either (its checks cost more than such a product)
            y = a.dot(b)
            if c is not None:
                y += c
            return y
        out_dtype = a.dtype
        if out_dtype not in _NATIVE_DTYPES:
            dt = blas_dtype(out_dtype)
            if dt != out_dtype:
                a, b = a.astype(dt), b.astype(dt)
                c = None if c is None else c.astype(dt)
        y = matmul(a.T if self.trans_a else a, b.T if self.trans_b else b)
        if self.alpha != 1.0:
            y *= y.dtype.type(self.alpha)
        if c is not None and self.beta != 0.0:
            y += c if self.beta == 1.0 else c * c.dtype.type(self.beta)
        return y if y.__class__ is np.ndarray and y.dtype is out_dtype else np.asarray(y, dtype=out_dtype)
