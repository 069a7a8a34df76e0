import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Celu")
class Celu(FloatUnaryKernel):
    def op(self, x):
        alpha = x.dtype.type(self.attr("alpha", 1.0))
        return np.maximum(x, 0) + np.minimum(np.expm1(np.minimum(x, 0) / alpha) * alpha, 0)
