import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis, stash_dtype
from onnxplug.providers.numpy.registry import op


@op("RMSNormalization")
class RMSNormalization(NumpyKernel):
    """x / sqrt(mean(x^2 over [axis, rank)) + eps) * scale, in the stash dtype."""

    def compute(self, x, scale):
        axis = norm_axis(int(self.attr("axis", -1)), x.ndim)
        dt = stash_dtype(x, int(self.attr("stash_type", 1)))
        xs = x.astype(dt, copy=False)
        ms = np.mean(np.square(xs), axis=tuple(range(axis, x.ndim)), keepdims=True)
        y = xs / np.sqrt(ms + dt.type(float(self.attr("epsilon", 1e-5))))
        y *= scale.astype(dt, copy=False)
        return np.asarray(y, dtype=x.dtype)
