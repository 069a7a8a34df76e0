import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("BitwiseXor")
class BitwiseXor(QuietBinaryKernel):
    def op(self, a, b):
        return np.bitwise_xor(a, b)
