import math

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import trailing_sums, widen
from onnxplug.providers.numpy.registry import op


@op("GlobalAveragePool")
class GlobalAveragePool(NumpyKernel):
    def compute(self, x):
        w = widen(x)
        spatial = tuple(range(2, x.ndim))
        if x.ndim < 3 or x.size == 0 or w.dtype.kind != "f":
            return np.asarray(np.mean(w, axis=spatial, keepdims=True), dtype=x.dtype)
        # one sum per (n, c) row of the spatial axes, without np.mean's Python; a BLAS product with a
        # vector of ones sums rows faster than numpy's reduction
        total = trailing_sums(w, spatial, True)
        if total is None:  # float16 sums in float32, as np.mean does; or a strided input
            total = np.add.reduce(w, axis=spatial, keepdims=True, dtype=np.float32 if w.dtype.itemsize < 4 else None)
        return np.asarray(np.true_divide(total, math.prod(x.shape[2:])), dtype=x.dtype)
