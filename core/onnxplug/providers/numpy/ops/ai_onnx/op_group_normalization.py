import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import normalize, stash_dtype
from onnxplug.providers.numpy.registry import op


@op("GroupNormalization")
class GroupNormalization(NumpyKernel):
    """Normalise over (channels of a group, spatial); scale/bias are per group in opset 18, per channel from 21."""

    def compute(self, x, scale, bias):
        groups = int(self.attr("num_groups"))
        n, c = x.shape[:2]
        dt = stash_dtype(x, int(self.attr("stash_type", 1))) if self.node.opset >= 21 else stash_dtype(x, 0)
        xg = x.astype(dt, copy=False).reshape((n, groups, -1))
        y = normalize(xg, (2,), float(self.attr("epsilon", 1e-5)))[0]
        if self.node.opset < 21 and scale.size == groups:
            scale = np.repeat(scale, c // groups)
            bias = np.repeat(bias, c // groups)
        y = y.reshape(x.shape)
        shp = (-1,) + (1,) * (x.ndim - 2)
        y *= scale.astype(dt, copy=False).reshape(shp)
        y += bias.astype(dt, copy=False).reshape(shp)
        return np.asarray(y, dtype=x.dtype)
