"""com.microsoft QLinearSoftmax: Y = quantize(softmax(dequantize(X))). The ``opset`` attribute is the
original Softmax's: below 13 the input is flattened to 2-D at ``axis`` (default 1), from 13 the
softmax runs along ``axis`` (default -1). As in onnxruntime, exp(x_scale * (x - row max)) comes
from a float32 table over the codes, and the row sums and quotients are float32."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import per_tensor
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import check_type, quantize
from onnxplug.providers.numpy.registry import op


@op("QLinearSoftmax", domain=DOMAIN)
class QLinearSoftmax(NumpyKernel):
    def compute(self, x, x_scale, x_zero_point, y_scale, y_zero_point=None):
        dtype = check_type(self, x)
        opset = int(self.attr("opset", 13))
        axis = norm_axis(int(self.attr("axis", -1 if opset >= 13 else 1)), x.ndim)
        if opset < 13:
            rows = x.reshape(int(np.prod(x.shape[:axis])), -1)
        else:
            rows = np.moveaxis(x, axis, -1)
        codes = rows.astype(np.int64)
        # exp of (code - max) * scale for every difference 0, -1, ..., -255 (the zero point cancels)
        table = np.exp(np.arange(-255, 1, dtype=np.float64) * float(per_tensor(self, "x_scale", x_scale)))
        table = table.astype(np.float32)
        e = table[codes - codes.max(axis=-1, keepdims=True) + 255]
        probs = e / e.sum(axis=-1, keepdims=True, dtype=np.float32)
        y = quantize(probs, per_tensor(self, "y_scale", y_scale), per_tensor(self, "y_zero_point", y_zero_point), dtype)
        return y.reshape(x.shape) if opset < 13 else np.ascontiguousarray(np.moveaxis(y, -1, axis))
