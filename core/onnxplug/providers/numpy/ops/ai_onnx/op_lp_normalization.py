import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("LpNormalization")
class LpNormalization(NumpyKernel):
    """x / ||x||_p along ``axis`` (p = 1 or 2); a zero norm gives 0."""

    def compute(self, x):
        xw = widen(x)
        axis = int(self.attr("axis", -1))
        p = int(self.attr("p", 2))
        if p == 1:
            norm = np.sum(np.abs(xw), axis=axis, keepdims=True)
        else:
            norm = np.sqrt(np.sum(np.square(xw), axis=axis, keepdims=True))
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.where(norm == 0, 0, xw / norm)
        return np.asarray(y, dtype=x.dtype)
