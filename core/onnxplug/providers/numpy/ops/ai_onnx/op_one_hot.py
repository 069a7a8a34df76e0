import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_axis
from onnxplug.providers.numpy.registry import op


@op("OneHot")
class OneHot(NumpyKernel):
    def compute(self, indices, depth, values):
        depth_n = int(np.asarray(depth).reshape(-1)[0])
        off, on = np.asarray(values).reshape(-1)[:2]
        axis = normalize_axis(int(self.attr("axis", -1)), indices.ndim + 1, "OneHot axis")
        idx = np.asarray(indices).astype(np.int64)  # float indices truncate
        idx = np.where(idx < 0, idx + depth_n, idx)  # -depth..-1 count from the end; others stay off
        classes = np.arange(depth_n, dtype=np.int64).reshape((depth_n,) + (1,) * (indices.ndim - axis))
        hot = np.expand_dims(idx, axis) == classes
        return np.where(hot, on, off).astype(values.dtype)
