"""Affine (onnxruntime, default domain): y = alpha * x + beta."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft._legacy import elementwise
from onnxplug.providers.numpy.registry import op


@op("Affine")
class Affine(NumpyKernel):
    def compute(self, x):
        alpha, beta = float(self.attr("alpha", 1.0)), float(self.attr("beta", 0.0))
        return elementwise(x, lambda v: v * v.dtype.type(alpha) + v.dtype.type(beta))
