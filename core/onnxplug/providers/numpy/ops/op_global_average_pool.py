import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("GlobalAveragePool")
class GlobalAveragePool(NumpyKernel):
    def compute(self, x):
        w = widen(x)
        if x.ndim < 3 or x.size == 0 or w.dtype.kind != "f":
            return np.asarray(np.mean(w, axis=tuple(range(2, x.ndim)), keepdims=True), dtype=x.dtype)
        # one pairwise sum per (n, c) row of the flattened spatial axes: np.mean's Python costs more
        # than the sum on small maps
        rows = w.reshape(x.shape[0], x.shape[1], -1)
        acc = np.float32 if w.dtype.itemsize < 4 else None  # float16 sums in float32, as np.mean does
        mean = np.true_divide(np.add.reduce(rows, axis=2, dtype=acc), rows.shape[2])
        return np.asarray(mean.reshape(x.shape[:2] + (1,) * (x.ndim - 2)), dtype=x.dtype)
