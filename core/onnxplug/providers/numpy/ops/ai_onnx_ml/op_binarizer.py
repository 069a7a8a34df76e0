import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op


@op("Binarizer", domain=ML)
class Binarizer(NumpyKernel):
    def compute(self, x):
        return (x > np.asarray(self.attr("threshold", 0.0), dtype=np.float64)).astype(x.dtype)
