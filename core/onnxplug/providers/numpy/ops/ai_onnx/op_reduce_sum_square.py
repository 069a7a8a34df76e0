import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceSumSquare")
class ReduceSumSquare(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        return np.sum(x * x, axis=axes, keepdims=keepdims, dtype=x.dtype)
