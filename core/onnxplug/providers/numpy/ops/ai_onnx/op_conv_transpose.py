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
        nd = len(kernel)
        strides, dilations = spatial_attrs(self.attr, kernel)
        adj = list(self.attr("output_padding", None) or [0] * nd)[:nd]
        in_sp = x.shape[2:]
        full = [s * (i - 1) + a + (k - 1) * d + 1 for s, i, a, k, d in zip(strides, in_sp, adj, kernel, dilations)]
        auto_pad = self.attr("auto_pad", "NOTSET")
        out_shape = self.attr("output_shape", None)
        if out_shape is not None or (pads is None and auto_pad in ("SAME_UPPER", "SAME_LOWER")):
            out_sp = list(out_shape)[-nd:] if out_shape is not None else [i * s for i, s in zip(in_sp, strides)]
            total = [f - o for f, o in zip(full, out_sp)]
            begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
        else:
            pads = list(pads or [0] * 2 * nd)
            begin = pads[:nd]
            out_sp = [f - pb - pe for f, pb, pe in zip(full, pads[:nd], pads[nd:])]
        dt = blas_dtype(x.dtype)
        y = conv_transpose_nd(x.astype(dt, copy=False), w.astype(dt, copy=False),
                              None if b is None else b.astype(dt, copy=False), strides, dilations, begin, out_sp,
                              int(self.attr("group", 1)))
        return y.astype(x.dtype, copy=False)
