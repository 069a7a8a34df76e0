import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Tanh")
class Tanh(FloatUnaryKernel):
    def op(self, x):
        return np.tanh(x)
