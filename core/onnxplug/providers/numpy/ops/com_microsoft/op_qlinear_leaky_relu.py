"""com.microsoft QLinearLeakyRelu: Y = quantize(leaky_relu(dequantize(X), alpha)), alpha 0.01 by
default, by a table of every code."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import through_table
from onnxplug.providers.numpy.registry import op


@op("QLinearLeakyRelu", domain=DOMAIN)
class QLinearLeakyRelu(NumpyKernel):
    def compute(self, x, x_scale, x_zero_point, y_scale, y_zero_point=None):
        alpha = np.float32(self.attr("alpha", 0.01))
        return through_table(self, x, x_scale, x_zero_point, y_scale, y_zero_point,
                             lambda v: np.where(v >= 0, v, v * alpha))
