import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("GlobalMaxPool")
class GlobalMaxPool(NumpyKernel):
    def compute(self, x):
        return np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)
