from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import conv_nd, conv_pads, spatial_attrs
from onnxplug.providers.numpy.ops._quant_util import centered, exact_int32
from onnxplug.providers.numpy.registry import op


@op("ConvInteger")
class ConvInteger(NumpyKernel):
    """Conv of (x - x_zero_point) and (w - w_zero_point) in exact integer arithmetic, int32 out."""

    def compute(self, x, w, x_zero_point=None, w_zero_point=None):
        kernel = list(self.attr("kernel_shape", None) or w.shape[2:])
        strides, dilations = spatial_attrs(self.attr, kernel)
        begin, end = conv_pads(self.attr, x.shape[2:], kernel, strides, dilations)
        xf = centered(x, x_zero_point)
        wf = centered(w, w_zero_point, w.shape[0], 0)
        return exact_int32(conv_nd(xf, wf, None, strides, dilations, begin, end, int(self.attr("group", 1)),
                                     tuning=self.tuning))
