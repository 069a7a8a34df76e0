import math

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import normalize_indices
from onnxplug.providers.numpy.registry import op


@op("GatherND")
class GatherND(NumpyKernel):
    def compute(self, x, indices):
        b = int(self.attr("batch_dims", 0))
        k = indices.shape[-1]
        batch = math.prod(x.shape[:b])
        data = x.reshape((batch,) + x.shape[b:])
        # One row of k coordinates per gathered slice, per batch entry.
        coords = indices.reshape(batch, -1, k)
        dims = np.asarray(x.shape[b:b + k], dtype=np.int64)
        coords = normalize_indices(coords, dims)
        rows = np.arange(batch).reshape(batch, 1)
        picked = data[(rows, *np.moveaxis(coords, -1, 0))]
        return np.ascontiguousarray(picked.reshape(indices.shape[:-1] + x.shape[b + k:]))
