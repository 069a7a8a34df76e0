import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Where")
class Where(NumpyKernel):
    def compute(self, condition, x, y):
        out = np.where(condition, x, y)
        return out if out.__class__ is np.ndarray and out.dtype is x.dtype else np.asarray(out, dtype=x.dtype)
