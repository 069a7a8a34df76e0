import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("LeakyRelu")
class LeakyRelu(FloatUnaryKernel):
    def op(self, x):
        return np.where(x < 0, x * x.dtype.type(self.attr("alpha", 0.01)), x)
