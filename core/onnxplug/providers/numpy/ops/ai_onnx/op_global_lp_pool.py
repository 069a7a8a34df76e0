import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("GlobalLpPool")
class GlobalLpPool(NumpyKernel):
    def compute(self, x):
        p = float(self.attr("p", 2))
        xw = widen(x)
        s = np.sum(np.abs(xw) ** xw.dtype.type(p), axis=tuple(range(2, x.ndim)), keepdims=True)
        return np.asarray(s ** xw.dtype.type(1.0 / p), dtype=x.dtype)
