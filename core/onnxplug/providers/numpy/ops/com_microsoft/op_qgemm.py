"""com.microsoft QGemm: alpha * (A' - a_zero_point) (B' - b_zero_point) * a_scale * b_scale, with
A' = A or A^T (transA), B' likewise, the int32 C added to the integer product first (its scale is
a_scale * b_scale); requantized to y_scale / y_zero_point when y_scale is given, float32 otherwise.
b_scale and b_zero_point are per tensor or per column."""

import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import constant_inputs
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix, centered, centered_range, requantize
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import per_tensor
from onnxplug.providers.numpy.registry import op


@op("QGemm", domain=DOMAIN)
class QGemm(NumpyKernel):
    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.prepared = IntegerMatrix(constant_inputs(node, context, (3, 5)))
        self.trans_a, self.trans_b = bool(self.attr("transA", 0)), bool(self.attr("transB", 0))

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, c=None, y_scale=None, y_zero_point=None):
        if a.ndim != 2 or b.ndim != 2:
            raise ValueError(f"{self.node.describe()}: A and B must be 2-D, got {list(a.shape)} and {list(b.shape)}")
        a = a.T if self.trans_a else a
        columns = b.shape[0] if self.trans_b else b.shape[1]
        for name, value in (("b_scale", b_scale), ("b_zero_point", b_zero_point)):
            if value is not None and value.size not in (1, columns):
                raise ValueError(f"{self.node.describe()}: {name} must be per tensor or per column ({columns})")
        b_zp = None if b_zero_point is None else b_zero_point.reshape(-1 if b_zero_point.size > 1 else ())
        a_zp = per_tensor(self, "a_zero_point", a_zero_point)
        bf = self.prepared.get(b, b_zp, centered_range(a.dtype, a_zp), c, self.trans_b)
        acc = matmul(centered(a, a_zp, dtype=bf.dtype), bf)
        if c is not None:
            acc += c.astype(acc.dtype)
        scale = (np.float32(self.attr("alpha", 1.0)) * np.float32(per_tensor(self, "a_scale", a_scale))
                 * b_scale.astype(np.float32).reshape(-1 if b_scale.size > 1 else ()))
        if y_scale is None:
            return acc.astype(np.float32, copy=False) * scale
        out_dtype = y_zero_point.dtype if y_zero_point is not None else a.dtype
        return requantize(acc, scale / np.float32(per_tensor(self, "y_scale", y_scale)),
                          per_tensor(self, "y_zero_point", y_zero_point), out_dtype)
