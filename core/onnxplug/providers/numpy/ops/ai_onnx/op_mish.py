import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Mish")
class Mish(FloatUnaryKernel):
    def op(self, x):
        return x * np.tanh(np.logaddexp(x.dtype.type(0), x))
