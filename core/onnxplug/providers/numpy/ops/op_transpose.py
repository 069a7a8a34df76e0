import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Transpose")
class Transpose(NumpyKernel):
    def compute(self, x):
        perm = self.attr("perm")  # default: reverse the axes
        return np.ascontiguousarray(np.transpose(x, None if perm is None else [int(p) for p in perm]))
