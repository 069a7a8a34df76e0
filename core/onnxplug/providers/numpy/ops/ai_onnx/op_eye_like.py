import numpy as np

from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("EyeLike")
class EyeLike(NumpyKernel):
    def compute(self, x):
        to = self.attr("dtype")
        dtype = x.dtype if to is None else numpy_dtype(to)
        return np.eye(x.shape[0], x.shape[1], k=int(self.attr("k", 0)), dtype=dtype)
