import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("CenterCropPad")
class CenterCropPad(NumpyKernel):
    """Centre-crop or zero-pad the given axes to ``shape`` (extra odd element at the end)."""

    def compute(self, x, shape):
        axes = [int(a) % x.ndim for a in (self.attr("axes", None) or range(x.ndim))]
        out_shape = list(x.shape)
        src = [slice(None)] * x.ndim
        dst = [slice(None)] * x.ndim
        for a, target in zip(axes, np.asarray(shape).reshape(-1)):
            target = int(target)
            dim = x.shape[a]
            out_shape[a] = target
            if target < dim:
                start = (dim - target) // 2
                src[a] = slice(start, start + target)
            elif target > dim:
                start = (target - dim) // 2
                dst[a] = slice(start, start + dim)
        y = np.zeros(out_shape, dtype=x.dtype)
        y[tuple(dst)] = x[tuple(src)]
        return y
