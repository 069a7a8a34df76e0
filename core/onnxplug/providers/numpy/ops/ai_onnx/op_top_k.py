import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("TopK")
class TopK(NumpyKernel):
    """The k largest (or smallest) values along ``axis`` and their int64 indices; ties keep the lower index."""

    def compute(self, x, k=None):
        kk = int(self.attr("k")) if self.node.opset < 10 else int(np.asarray(k).reshape(-1)[0])
        axis = int(self.attr("axis", -1)) % x.ndim
        if not 0 <= kk <= x.shape[axis]:
            raise ValueError(f"{self.node.describe()}: k={kk} is outside [0, {x.shape[axis]}]")
        largest = bool(self.attr("largest", 1))
        key = x
        if largest:
            key = -x.astype(np.int64) if x.dtype.kind in "ub" else np.negative(x)
        order = np.argsort(key, axis=axis, kind="stable")
        idx = np.take(order, np.arange(kk), axis=axis)
        return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)
