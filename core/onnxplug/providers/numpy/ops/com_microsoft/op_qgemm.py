"""com.microsoft QGemm: alpha * (A' - a_zero_point) (B' - b_zero_point) * a_scale * b_scale, with
A' = A or A^T (transA), B' likewise, the int32 C added to the integer product first (its scale is
a_scale * b_scale); requantized to y_scale / y_zero_point when y_scale is given, float32 otherwise.
b_scale and b_zero_point are per tensor or per column."""

import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._quant_util import centered, requantize
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import per_tensor
from onnxplug.providers.numpy.registry import op


@op("QGemm", domain=DOMAIN)
class QGemm(NumpyKernel):
    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, c=None, y_scale=None, y_zero_point=None):
        if a.ndim != 2 or b.ndim != 2:
            raise ValueError(f"{self.node.describe()}: A and B must be 2-D, got {list(a.shape)} and {list(b.shape)}")
        a = a.T if self.attr("transA", 0) else a
        b = b.T if self.attr("transB", 0) else b
        columns = b.shape[1]
        for name, value in (("b_scale", b_scale), ("b_zero_point", b_zero_point)):
            if value is not None and value.size not in (1, columns):
                raise ValueError(f"{self.node.describe()}: {name} must be per tensor or per column ({columns})")
        b_zp = None if b_zero_point is None else b_zero_point.reshape(-1 if b_zero_point.size > 1 else ())
        acc = matmul(centered(a, per_tensor(self, "a_zero_point", a_zero_point)), centered(b, b_zp))
        if c is not None:
            acc += c.astype(np.float64)
        scale = (np.float32(self.attr("alpha", 1.0)) * np.float32(per_tensor(self, "a_scale", a_scale))
                 * b_scale.astype(np.float32).reshape(-1 if b_scale.size > 1 else ()))
        if y_scale is None:
            return acc.astype(np.float32) * scale
        out_dtype = y_zero_point.dtype if y_zero_point is not None else a.dtype
        return requantize(acc, scale / np.float32(per_tensor(self, "y_scale", y_scale)),
                          per_tensor(self, "y_zero_point", y_zero_point), out_dtype)
