import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import normalize, widen
from onnxplug.providers.numpy.registry import op


@op("InstanceNormalization")
class InstanceNormalization(NumpyKernel):
    """Normalise each (n, c) plane over its spatial axes, then per-channel scale and bias."""

    def compute(self, x, scale, b):
        shp = (-1,) + (1,) * (x.ndim - 2)
        y = normalize(widen(x), tuple(range(2, x.ndim)), float(self.attr("epsilon", 1e-5)))[0]
        y *= widen(scale).reshape(shp)
        y += widen(b).reshape(shp)
        return np.asarray(y, dtype=x.dtype)
