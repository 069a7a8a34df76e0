from onnxplug.geometry import conv_transpose_pads
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import conv_transpose_nd, spatial_attrs
from onnxplug.providers.numpy.ops._nn_util import blas_dtype
from onnxplug.providers.numpy.registry import op


@op("ConvTranspose")
class ConvTranspose(NumpyKernel):
    """ConvTranspose: columns = W^T @ X (one matmul), then col2im; pads from output_shape/auto_pad."""

    def compute(self, x, w, b=None):
        return self.transpose(x, w, b, self.attr("pads", None))

    def transpose(self, x, w, b, pads):
        """The op with explicit ``pads`` (also com.microsoft ConvTransposeWithDynamicPads's input)."""
        kernel = list(self.attr("kernel_shape", None) or w.shape[2:])
        strides, dilations = spatial_attrs(self.attr, kernel)
        begin, _, out_sp = conv_transpose_pads(x.shape[2:], kernel, strides, dilations,
                                               self.attr("output_padding", None), self.attr("auto_pad", "NOTSET"),
                                               pads, self.attr("output_shape", None))
        dt = blas_dtype(x.dtype)
        y = conv_transpose_nd(x.astype(dt, copy=False), w.astype(dt, copy=False),
                              None if b is None else b.astype(dt, copy=False), strides, dilations, begin, out_sp,
                              int(self.attr("group", 1)))
        return y.astype(x.dtype, copy=False)
