"""com.microsoft QLinearGlobalAveragePool: Y = quantize(mean over the spatial axes of dequantize(X)),
NCHW... or, with channels_last, N...C; the spatial axes are kept as 1."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import per_tensor
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import check_type, quantize
from onnxplug.providers.numpy.registry import op


@op("QLinearGlobalAveragePool", domain=DOMAIN)
class QLinearGlobalAveragePool(NumpyKernel):
    def compute(self, x, x_scale, x_zero_point, y_scale, y_zero_point=None):
        dtype = check_type(self, x)
        if x.ndim < 3:
            raise ValueError(f"{self.node.describe()}: X must have spatial axes, got shape {list(x.shape)}")
        axes = tuple(range(1, x.ndim - 1)) if self.attr("channels_last", 0) else tuple(range(2, x.ndim))
        # the integer sum is exact; the zero point and scales apply to it once
        count = int(np.prod([x.shape[a] for a in axes]))
        total = x.sum(axis=axes, keepdims=True, dtype=np.int64)
        x_zero_point = per_tensor(self, "x_zero_point", x_zero_point)
        if x_zero_point is not None:
            total = total - int(x_zero_point) * count
        mean = total.astype(np.float32) * (np.float32(per_tensor(self, "x_scale", x_scale)) / np.float32(count))
        return quantize(mean, per_tensor(self, "y_scale", y_scale), per_tensor(self, "y_zero_point", y_zero_point),
                        dtype)
