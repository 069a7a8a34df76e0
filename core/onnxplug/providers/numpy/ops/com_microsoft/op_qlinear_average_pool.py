"""com.microsoft QLinearAveragePool: Y = quantize(AveragePool(dequantize(X))) with AveragePool's
attributes (kernel_shape, strides, pads, auto_pad, ceil_mode, count_include_pad); channels_last
takes N...C input and gives N...C output."""

import numpy as np

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import dequantize, per_tensor
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import check_type, quantize
from onnxplug.providers.numpy.ops.ai_onnx.op_average_pool import AveragePool
from onnxplug.providers.numpy.registry import op


@op("QLinearAveragePool", domain=DOMAIN)
class QLinearAveragePool(AveragePool):
    def compute(self, x, x_scale, x_zero_point, y_scale, y_zero_point=None):
        dtype = check_type(self, x)
        channels_last = bool(self.attr("channels_last", 0))
        if channels_last:
            x = np.moveaxis(x, -1, 1)
        values = dequantize(x, per_tensor(self, "x_scale", x_scale), per_tensor(self, "x_zero_point", x_zero_point))
        pooled = super().compute(np.ascontiguousarray(values))
        y = quantize(pooled, per_tensor(self, "y_scale", y_scale), per_tensor(self, "y_zero_point", y_zero_point),
                     dtype)
        return np.ascontiguousarray(np.moveaxis(y, 1, -1)) if channels_last else y
