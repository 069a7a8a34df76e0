import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Softsign")
class Softsign(FloatUnaryKernel):
    def op(self, x):
        return x / (np.abs(x) + 1)
