import math

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Flatten")
class Flatten(NumpyKernel):
    def compute(self, x):
        axis = int(self.attr("axis", 1))
        axis = axis if axis == x.ndim else normalize_axis(axis, x.ndim)
        return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
