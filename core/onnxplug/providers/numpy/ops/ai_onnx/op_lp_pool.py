import numpy as np

from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.ops._pool_util import PoolKernel, sum_pool
from onnxplug.providers.numpy.registry import op


@op("LpPool")
class LpPool(PoolKernel):
    """(sum over the window of |x|^p) ^ (1/p), zero padding."""

    def compute(self, x):
        p = float(self.attr("p", 2))
        xw = widen(x)
        t = xw.dtype.type
        powered = np.square(xw) if p == 2 else np.abs(xw) ** t(p)
        s = sum_pool(powered, self.geometry(x))
        y = np.sqrt(s) if p == 2 else s ** t(1.0 / p)
        return np.asarray(y, dtype=x.dtype)
