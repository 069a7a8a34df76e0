import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_axis, normalize_indices
from onnxplug.providers.numpy.registry import op


@op("GatherElements")
class GatherElements(NumpyKernel):
    def compute(self, x, indices):
        axis = normalize_axis(int(self.attr("axis", 0)), x.ndim)
        return np.take_along_axis(x, normalize_indices(indices, x.shape[axis]), axis=axis)
