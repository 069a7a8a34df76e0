import numpy as np

from onnxplug.providers.numpy.ops._nn_util import AxisSoftmaxKernel
from onnxplug.providers.numpy.registry import op


@op("Hardmax")
class Hardmax(AxisSoftmaxKernel):
    """1 at the first maximum along the axis, 0 elsewhere."""

    def op(self, x, axis):
        y = np.zeros_like(x)
        if x.size:
            np.put_along_axis(y, np.argmax(x, axis=axis, keepdims=True), 1, axis=axis)
        return y
