import numpy as np

from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel, erf
from onnxplug.providers.numpy.registry import op


@op("Gelu")
class Gelu(FloatUnaryKernel):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation when approximate='tanh'."""

    def op(self, x):
        t = x.dtype.type
        if self.attr("approximate", "none") == "tanh":
            inner = np.tanh((x + t(0.044715) * x * x * x) * t(np.sqrt(2 / np.pi)))
        else:
            inner = erf(x * t(1 / np.sqrt(2)))
        inner += 1
        inner *= x
        inner *= t(0.5)
        return inner
