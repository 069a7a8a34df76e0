import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("IsInf")
class IsInf(NumpyKernel):
    def compute(self, x):
        positive, negative = self.attr("detect_positive", 1), self.attr("detect_negative", 1)
        if positive and negative:
            return np.asarray(np.isinf(x))
        if positive:
            return np.asarray(np.isposinf(x))
        if negative:
            return np.asarray(np.isneginf(x))
        return np.zeros(x.shape, dtype=np.bool_)
