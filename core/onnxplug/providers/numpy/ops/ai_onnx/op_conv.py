import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import BiasedWeights, ConvAttributes, conv_nd, constant_inputs
from onnxplug.providers.numpy.ops._nn_util import blas_dtype
from onnxplug.providers.numpy.registry import op


@op("Conv")
class Conv(NumpyKernel):
    """Conv: 1x1 matmul, depthwise shifted sums or im2col + one batched matmul (see kernels/conv/dispatch.py).

    float16 (and bfloat16) accumulate in float32 and round once at the end.
    """

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.conv_attrs = ConvAttributes(self.attr)
        self.weights = BiasedWeights(constant_inputs(node, context, (1, 2)))

    def compute(self, x, w, b=None):
        strides, dilations, begin, end = self.conv_attrs.resolve(x.shape[2:], w.shape[2:])
        dt = blas_dtype(x.dtype)
        y = conv_nd(x.astype(dt, copy=False), w.astype(dt, copy=False), None if b is None else b.astype(dt, copy=False),
                    strides, dilations, begin, end, self.conv_attrs.group, weights=self.weights, tuning=self.tuning)
        return y.astype(x.dtype, copy=False)
