"""com.microsoft QLinearConv: ai.onnx QLinearConv's kernel, with ``channels_last`` (input and output
N...C) as onnxruntime's NHWC rewrite of quantized models writes it."""

import numpy as np

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_qlinear_conv import QLinearConv as _OnnxQLinearConv
from onnxplug.providers.numpy.registry import op


@op("QLinearConv", domain=DOMAIN)
class QLinearConv(_OnnxQLinearConv):
    def compute(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point=None, b=None):
        if not self.attr("channels_last", 0):
            return super().compute(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, b)
        y = super().compute(np.moveaxis(x, -1, 1), x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                            y_zero_point, b)
        return np.ascontiguousarray(np.moveaxis(y, 1, -1))
