import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Selu")
class Selu(FloatUnaryKernel):
    def op(self, x):
        t = x.dtype.type
        alpha = t(self.attr("alpha", 1.67326319217681884765625))
        gamma = t(self.attr("gamma", 1.05070102214813232421875))
        return np.where(x > 0, x * gamma, np.expm1(np.minimum(x, 0)) * (alpha * gamma))
