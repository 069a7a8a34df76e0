import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Unique")
class Unique(NumpyKernel):
    def compute(self, x):
        axis = self.attr("axis")
        if axis is not None:
            axis = normalize_axis(int(axis), x.ndim)
        data = x.reshape(-1) if axis is None else x
        y, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                              return_counts=True, axis=axis)
        inverse = inverse.reshape(-1)
        if not self.attr("sorted", 1):  # keep the order of first occurrence
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            y = np.take(y, order, axis=0 if axis is None else axis)
            first, counts, inverse = first[order], counts[order], rank[inverse]
        i64 = np.int64
        return y, first.astype(i64), inverse.astype(i64), counts.astype(i64)
