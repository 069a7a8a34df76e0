import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Softplus")
class Softplus(FloatUnaryKernel):
    def op(self, x):
        return np.logaddexp(x.dtype.type(0), x)
