import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceL2")
class ReduceL2(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        return np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims, dtype=x.dtype))
