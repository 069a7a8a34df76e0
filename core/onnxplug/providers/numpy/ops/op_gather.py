import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_axis, normalize_indices
from onnxplug.providers.numpy.registry import op


@op("Gather")
class Gather(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 0))

    def compute(self, x, indices):
        axis = normalize_axis(self.axis, x.ndim)
        return np.take(x, normalize_indices(indices, x.shape[axis]), axis=axis)
