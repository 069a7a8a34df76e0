import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Compress")
class Compress(NumpyKernel):
    def compute(self, x, condition):
        axis = self.attr("axis")  # absent: work on the flattened input
        condition = np.asarray(condition, dtype=np.bool_).reshape(-1)
        if axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = normalize_axis(int(axis), x.ndim)
        # a condition shorter than the axis counts as False for the remaining entries
        selected = np.nonzero(condition[: x.shape[axis]])[0]
        return np.take(x, selected, axis=axis)
