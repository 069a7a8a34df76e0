import numpy as np

from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._qdq_util import (SATURABLE_FLOAT8, broadcast_param, integer_range,
                                                      output_dtype, saturate_float, widened)
from onnxplug.providers.numpy.registry import op


@op("QuantizeLinear")
class QuantizeLinear(NumpyKernel):
    """y = saturate(round_half_even(x / scale) + zero_point), per tensor, per axis or per block.

    The division runs in the ``precision`` type (default: the scale's type), as the spec says.
    """

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.axis, self.block = self.attr("axis", 1), self.attr("block_size", 0)
        self.output_dtype = self.attr("output_dtype", 0)
        self.precision = numpy_dtype(self.attr("precision")) if self.attr("precision", 0) else None
        self.saturate = self.attr("saturate", 1)

    def compute(self, x, scale, zero_point=None):
        axis, block = self.axis, self.block
        target = output_dtype(zero_point, self.output_dtype)
        s = broadcast_param(scale, x.shape, axis, block)
        precision = self.precision or np.asarray(scale).dtype
        # the quotient is a new array: the steps below run in place on it
        q = np.asarray((x if x.dtype in _WIDE else widened(x)) / widened(s))
        if q.dtype != precision and precision.itemsize < 4:  # 16-bit division: round the quotient
            q = q.astype(precision).astype(np.float32)
        zp = None if zero_point is None else widened(broadcast_param(zero_point, x.shape, axis, block))
        bounds = integer_range(target)
        if bounds is not None:
            lo, hi = bounds
            np.rint(q, out=q)
            if zp is not None:
                q += zp
            # np.clip's wrapper costs more than these two calls on a small tensor; NaN stays NaN alike
            np.maximum(q, lo, out=q)
            np.minimum(q, hi, out=q)
            # numpy's own integer types take the clipped integers directly; ml_dtypes' through int32
            return q.astype(target) if target.kind in "iu" else q.astype(np.int32).astype(target)
        if zp is not None:
            q = q + zp
        if target.name in SATURABLE_FLOAT8 and self.saturate:
            return saturate_float(q, target)
        return np.asarray(q.astype(target))


_WIDE = (np.dtype(np.float32), np.dtype(np.float64))
