import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis, normalize, stash_dtype
from onnxplug.providers.numpy.registry import op


@op("LayerNormalization")
class LayerNormalization(NumpyKernel):
    """Normalise over axes [axis, rank) in the stash dtype; outputs Y, Mean, InvStdDev."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self.axis = int(self.attr("axis", -1))
        self.stash_type = int(self.attr("stash_type", 1))
        self.epsilon = float(self.attr("epsilon", 1e-5))

    def compute(self, x, scale, b=None):
        axis = norm_axis(self.axis, x.ndim)
        dt = stash_dtype(x, self.stash_type)
        y, mean, inv_std = normalize(x.astype(dt, copy=False), tuple(range(axis, x.ndim)), self.epsilon)
        y *= scale.astype(dt, copy=False)
        if b is not None:
            y += b.astype(dt, copy=False)
        return np.asarray(y, dtype=x.dtype), mean.astype(dt, copy=False), inv_std.astype(dt, copy=False)
