import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints
from onnxplug.providers.numpy.registry import op


@op("ConstantOfShape")
class ConstantOfShape(NumpyKernel):
    def compute(self, shape):
        value = self.attr("value")  # a one-element tensor; float32 zero by default
        value = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
        return np.full(ints(shape), value[0], dtype=value.dtype)
