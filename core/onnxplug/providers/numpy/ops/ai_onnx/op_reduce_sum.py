import numpy as np

from onnxplug.providers.numpy.ops._base import ReduceKernel
from onnxplug.providers.numpy.ops._nn_util import trailing_sums
from onnxplug.providers.numpy.registry import op


@op("ReduceSum")
class ReduceSum(ReduceKernel):
    axes_input_since = 13

    def op(self, x, axes, keepdims):
        total = trailing_sums(x, axes, keepdims)
        return np.sum(x, axis=axes, keepdims=keepdims) if total is None else total
