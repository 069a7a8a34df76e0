import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("PRelu")
class PRelu(NumpyKernel):
    """x if x >= 0 else slope * x; a per-channel slope of old opsets broadcasts along axis 1."""

    def compute(self, x, slope):
        xs, sl = widen(x), widen(slope)
        if sl.ndim == 1 and x.ndim > 2 and sl.shape[0] == x.shape[1] and sl.shape[0] != x.shape[-1]:
            sl = sl.reshape((-1,) + (1,) * (x.ndim - 2))
        return np.asarray(np.where(xs < 0, xs * sl, xs), dtype=x.dtype)
