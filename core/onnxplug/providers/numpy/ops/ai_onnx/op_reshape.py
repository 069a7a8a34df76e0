import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints
from onnxplug.providers.numpy.registry import op


@op("Reshape")
class Reshape(NumpyKernel):
    def compute(self, x, shape=None):
        dims = ints(self.attr("shape") if self.node.opset < 5 else shape)
        if not self.attr("allowzero", 0):  # 0 copies the input's dimension
            dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        return x.reshape(dims)
