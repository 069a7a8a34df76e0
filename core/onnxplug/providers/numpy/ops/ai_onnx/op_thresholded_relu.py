import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("ThresholdedRelu")
class ThresholdedRelu(FloatUnaryKernel):
    def op(self, x):
        return np.where(x > x.dtype.type(self.attr("alpha", 1.0)), x, 0)
