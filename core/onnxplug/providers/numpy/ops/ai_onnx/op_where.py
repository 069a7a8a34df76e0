import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Where")
class Where(NumpyKernel):
    def compute(self, condition, x, y):
        return np.asarray(np.where(condition, x, y), dtype=x.dtype)
