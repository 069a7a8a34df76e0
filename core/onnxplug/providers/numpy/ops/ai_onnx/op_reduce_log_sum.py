import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceLogSum")
class ReduceLogSum(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        return np.log(np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype))  # -inf on an empty set
