"""QLinearAdd and QLinearMul: C = quantize(f(dequantize(A), dequantize(B))), broadcasting as numpy."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.contrib_rules import dequantize, per_tensor
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import check_type, quantize


class QLinearBinary(NumpyKernel):
    """Inputs A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, C_zero_point?."""

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point=None):
        dtype = check_type(self, a)
        if b.dtype != dtype:
            raise ValueError(f"{self.node.describe()}: A and B must have one type, got {a.dtype} and {b.dtype}")
        fa = dequantize(a, per_tensor(self, "A_scale", a_scale), per_tensor(self, "A_zero_point", a_zero_point))
        fb = dequantize(b, per_tensor(self, "B_scale", b_scale), per_tensor(self, "B_zero_point", b_zero_point))
        return quantize(self.op(fa, fb), per_tensor(self, "C_scale", c_scale),
                        per_tensor(self, "C_zero_point", c_zero_point), dtype)

    def op(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError
