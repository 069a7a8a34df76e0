import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Sin")
class Sin(QuietUnaryKernel):
    def op(self, x):
        return np.sin(x)
