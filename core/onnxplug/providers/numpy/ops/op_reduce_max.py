import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel, lowest
from onnxplug.providers.numpy.registry import op


@op("ReduceMax")
class ReduceMax(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        if x.size:
            return np.maximum.reduce(x, axis=axes, keepdims=keepdims)
        return np.max(x, axis=axes, keepdims=keepdims, initial=lowest(x.dtype))  # -inf on an empty set
