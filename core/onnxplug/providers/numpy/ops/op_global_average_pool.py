import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("GlobalAveragePool")
class GlobalAveragePool(NumpyKernel):
    def compute(self, x):
        return np.asarray(np.mean(widen(x), axis=tuple(range(2, x.ndim)), keepdims=True), dtype=x.dtype)
