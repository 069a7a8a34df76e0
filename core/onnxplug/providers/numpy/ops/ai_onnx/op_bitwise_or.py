import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("BitwiseOr")
class BitwiseOr(QuietBinaryKernel):
    def op(self, a, b):
        return np.bitwise_or(a, b)
