import numpy as np

from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.ops._pool_util import PoolKernel, sum_pool
from onnxplug.providers.numpy.registry import op


@op("AveragePool")
class AveragePool(PoolKernel):
    """Window sums divided by the tap count (explicit pads counted only with count_include_pad)."""

    def compute(self, x):
        g = self.geometry(x)
        xw = widen(x)
        y = sum_pool(xw, g)
        counts = g.counts(bool(self.attr("count_include_pad", 0)))
        with np.errstate(divide="ignore", invalid="ignore"):
            y /= counts.astype(y.dtype)
        return np.asarray(y, dtype=x.dtype)
