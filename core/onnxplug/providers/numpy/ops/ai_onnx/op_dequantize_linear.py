import numpy as np

from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._qdq_util import broadcast_param, integer_range, widened
from onnxplug.providers.numpy.registry import op


@op("DequantizeLinear")
class DequantizeLinear(NumpyKernel):
    """y = (x - zero_point) * scale, in the ``output_dtype`` type (default: the scale's type).

    Float8/float4 inputs have no zero point (it must be 0), so it is ignored for them.
    """

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.axis, self.block = self.attr("axis", 1), self.attr("block_size", 0)
        self.output_dtype = numpy_dtype(self.attr("output_dtype")) if self.attr("output_dtype", 0) else None

    def compute(self, x, scale, zero_point=None):
        axis, block = self.axis, self.block
        out = self.output_dtype or np.asarray(scale).dtype
        if x.dtype == np.int32 and np.asarray(scale).dtype == np.float32 and out == np.float32:
            # as onnxruntime: the int32 difference rounded to float32, then a float32 product
            d = x if zero_point is None else x - broadcast_param(zero_point, x.shape, axis, block).astype(np.int32)
            return np.asarray(d.astype(np.float32) * broadcast_param(scale, x.shape, axis, block))
        # a new array (astype copies): the steps below run in place on it where the type stays
        dx = np.asarray(x.astype(np.float64) if x.dtype in (np.int32, np.float64) else widened(x))
        if zero_point is not None and (integer_range(x.dtype) is not None or x.dtype == np.int32):
            dx -= broadcast_param(zero_point, x.shape, axis, block).astype(dx.dtype)
        s = widened(broadcast_param(scale, x.shape, axis, block))
        if s.dtype.itemsize <= dx.dtype.itemsize:
            dx *= s
        else:
            dx = dx * s
        return np.asarray(dx.astype(out, copy=False))
