"""com.onnxplug.nhwc GlobalAveragePool: the mean over the spatial axes of (N, *spatial, C) data."""

import numpy as np

from onnxplug.fused_schemas import NHWC_DOMAIN
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("GlobalAveragePool", domain=NHWC_DOMAIN)
class GlobalAveragePoolChannelsLast(NumpyKernel):
    def compute(self, x):
        w = widen(x)
        if x.size == 0 or w.dtype.kind != "f":
            return np.asarray(np.mean(w, axis=tuple(range(1, x.ndim - 1)), keepdims=True), dtype=x.dtype)
        rows = w.reshape(x.shape[0], -1, x.shape[-1])
        acc = np.float32 if w.dtype.kind == "f" and w.dtype.itemsize < 4 else None
        mean = np.true_divide(np.add.reduce(rows, axis=1, dtype=acc), rows.shape[1])
        return np.asarray(mean.reshape((x.shape[0],) + (1,) * (x.ndim - 2) + (x.shape[-1],)), dtype=x.dtype)
