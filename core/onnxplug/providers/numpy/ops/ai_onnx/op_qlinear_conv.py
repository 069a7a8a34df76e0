import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import conv_nd, conv_pads, spatial_attrs
from onnxplug.providers.numpy.ops._quant_util import centered, requantize
from onnxplug.providers.numpy.registry import op


@op("QLinearConv")
class QLinearConv(NumpyKernel):
    """Exact integer conv (+ int32 bias), requantised with x_scale * w_scale / y_scale (per channel)."""

    def compute(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point=None, b=None):
        kernel = list(self.attr("kernel_shape", None) or w.shape[2:])
        nd = len(kernel)
        strides, dilations = spatial_attrs(self.attr, kernel)
        begin, end = conv_pads(self.attr, x.shape[2:], kernel, strides, dilations)
        acc = conv_nd(centered(x, x_zero_point), centered(w, w_zero_point, w.shape[0], 0),
                      None if b is None else b.astype(np.float64), strides, dilations, begin, end,
                      int(self.attr("group", 1)), tuning=self.tuning)
        ws = np.asarray(w_scale, dtype=np.float32)
        if ws.size > 1:
            ws = ws.reshape((-1,) + (1,) * nd)
        mult = np.float32(x_scale) * ws / np.float32(y_scale)
        out_dtype = y_zero_point.dtype if y_zero_point is not None else x.dtype
        return requantize(acc, mult, y_zero_point, out_dtype)
