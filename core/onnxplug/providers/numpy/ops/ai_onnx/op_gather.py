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
        if indices.ndim == 0 and self.axis == 0 and x.ndim:  # one slice of the first axis: a view
            i, size = int(indices), x.shape[0]
            if -size <= i < size:
                return x[i, ...]
        axis = normalize_axis(self.axis, x.ndim)
        return x.take(normalize_indices(indices, x.shape[axis]), axis=axis)  # np.take without its wrapper
