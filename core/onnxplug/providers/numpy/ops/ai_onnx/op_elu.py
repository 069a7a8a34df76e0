import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Elu")
class Elu(FloatUnaryKernel):
    def op(self, x):
        return np.where(x > 0, x, np.expm1(np.minimum(x, 0)) * x.dtype.type(self.attr("alpha", 1.0)))
