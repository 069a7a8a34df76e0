import numpy as np

from onnxplug.providers.numpy.ops._nn_util import fast_mean
from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceMean")
class ReduceMean(QuietReduceKernel):
    """ReduceMean; the mean of an empty set is 0, as onnxruntime gives (numpy's would be NaN)."""

    def op(self, x, axes, keepdims):
        if x.size == 0:
            return np.add.reduce(x, axis=axes, keepdims=keepdims)
        return fast_mean(x, axes, keepdims)
