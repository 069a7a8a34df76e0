import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel, highest
from onnxplug.providers.numpy.registry import op


@op("ReduceMin")
class ReduceMin(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        if x.size:
            return np.minimum.reduce(x, axis=axes, keepdims=keepdims)
        return np.min(x, axis=axes, keepdims=keepdims, initial=highest(x.dtype))  # +inf on an empty set
