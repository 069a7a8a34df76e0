"""ScaledTanh (onnxruntime, default domain): y = alpha * tanh(beta * x)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft._legacy import elementwise
from onnxplug.providers.numpy.registry import op


@op("ScaledTanh")
class ScaledTanh(NumpyKernel):
    def compute(self, x):
        alpha, beta = float(self.attr("alpha", 1.0)), float(self.attr("beta", 1.0))
        return elementwise(x, lambda v: v.dtype.type(alpha) * np.tanh(v * v.dtype.type(beta)))
