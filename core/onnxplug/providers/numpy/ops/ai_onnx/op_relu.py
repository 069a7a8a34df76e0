import numpy as np

from onnxplug.providers.numpy.ops._base import UnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Relu")
class Relu(UnaryKernel):
    def op(self, x):
        return np.maximum(x, 0)
