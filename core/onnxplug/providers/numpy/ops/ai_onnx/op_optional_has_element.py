import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("OptionalHasElement")
class OptionalHasElement(NumpyKernel):
    def compute(self, value=None):
        return np.array(value is not None)
