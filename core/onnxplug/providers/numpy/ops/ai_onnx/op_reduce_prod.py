import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceProd")
class ReduceProd(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        return np.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
