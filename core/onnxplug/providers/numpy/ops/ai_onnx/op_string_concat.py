import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("StringConcat")
class StringConcat(NumpyKernel):
    def compute(self, x, y):
        return np.asarray(np.char.add(x.astype(np.str_), y.astype(np.str_)), dtype=object)
