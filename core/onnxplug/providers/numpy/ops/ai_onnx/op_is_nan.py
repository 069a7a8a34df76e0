import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("IsNaN")
class IsNaN(NumpyKernel):
    def compute(self, x):
        return np.asarray(np.isnan(x))
