import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("HardSwish")
class HardSwish(FloatUnaryKernel):
    def op(self, x):
        y = x * x.dtype.type(1 / 6)
        y += x.dtype.type(0.5)
        np.clip(y, 0, 1, out=y)
        return np.multiply(y, x, out=y)
