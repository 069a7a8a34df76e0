"""ParametricSoftplus (onnxruntime, default domain): y = alpha * ln(exp(beta * x) + 1)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft._legacy import elementwise
from onnxplug.providers.numpy.registry import op


@op("ParametricSoftplus")
class ParametricSoftplus(NumpyKernel):
    def compute(self, x):
        alpha, beta = float(self.attr("alpha", 1.0)), float(self.attr("beta", 1.0))
        return elementwise(x, lambda v: v.dtype.type(alpha) * np.logaddexp(v.dtype.type(0), v * v.dtype.type(beta)))
