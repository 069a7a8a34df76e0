import numpy as np

from onnxplug.providers.numpy.ops._nn_util import AxisSoftmaxKernel
from onnxplug.providers.numpy.registry import op


@op("LogSoftmax")
class LogSoftmax(AxisSoftmaxKernel):
    def op(self, x, axis):
        with np.errstate(invalid="ignore", divide="ignore"):
            y = x - np.max(x, axis=axis, keepdims=True)
            y -= np.log(np.sum(np.exp(y), axis=axis, keepdims=True))
        return y
