import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceMean")
class ReduceMean(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        return np.mean(x, axis=axes, keepdims=keepdims)
