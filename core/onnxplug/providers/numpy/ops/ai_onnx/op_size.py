import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Size")
class Size(NumpyKernel):
    def compute(self, x):
        return np.array(x.size, dtype=np.int64)
