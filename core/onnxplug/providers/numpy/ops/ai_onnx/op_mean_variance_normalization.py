import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("MeanVarianceNormalization")
class MeanVarianceNormalization(NumpyKernel):
    """(x - mean) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over ``axes`` (default [0, 2, 3]), as the ONNX function."""

    def compute(self, x):
        xw = widen(x)
        axes = tuple(int(a) for a in self.attr("axes", [0, 2, 3]))
        mean = np.mean(xw, axis=axes, keepdims=True)
        var = np.mean(np.square(xw), axis=axes, keepdims=True) - np.square(mean)
        y = (xw - mean) / (np.sqrt(np.maximum(var, 0)) + xw.dtype.type(1e-9))
        return np.asarray(y, dtype=x.dtype)
