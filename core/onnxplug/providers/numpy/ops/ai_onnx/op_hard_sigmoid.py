import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("HardSigmoid")
class HardSigmoid(FloatUnaryKernel):
    def op(self, x):
        t = x.dtype.type
        y = x * t(self.attr("alpha", 0.2))
        y += t(self.attr("beta", 0.5))
        return np.clip(y, 0, 1, out=y)
