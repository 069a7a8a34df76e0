import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._conv_util import conv_nd, conv_pads, spatial_attrs
from onnxplug.providers.numpy.ops._nn_util import blas_dtype
from onnxplug.providers.numpy.registry import op


@op("Conv")
class Conv(NumpyKernel):
    """Conv: 1x1 matmul, depthwise shifted sums or im2col + one batched matmul (see _conv_util).

    float16 (and bfloat16) accumulate in float32 and round once at the end.
    """

    def compute(self, x, w, b=None):
        kernel = list(self.attr("kernel_shape", None) or w.shape[2:])
        strides, dilations = spatial_attrs(self.attr, kernel)
        begin, end = conv_pads(self.attr, x.shape[2:], kernel, strides, dilations)
        dt = blas_dtype(x.dtype)
        y = conv_nd(x.astype(dt, copy=False), w.astype(dt, copy=False), None if b is None else b.astype(dt, copy=False),
                    strides, dilations, begin, end, int(self.attr("group", 1)))
        return y.astype(x.dtype, copy=False)
