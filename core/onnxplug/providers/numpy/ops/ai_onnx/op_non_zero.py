import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("NonZero")
class NonZero(NumpyKernel):
    def compute(self, x):
        if x.ndim == 0:  # a scalar has no coordinates: shape (0, 1) if non-zero, else (0, 0)
            return np.zeros((0, int(bool(x))), dtype=np.int64)
        return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)
