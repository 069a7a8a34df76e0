import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceL1")
class ReduceL1(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        return np.sum(np.abs(x), axis=axes, keepdims=keepdims, dtype=x.dtype)
