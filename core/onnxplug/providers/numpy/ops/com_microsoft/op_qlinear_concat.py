"""com.microsoft QLinearConcat: inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
tensor; each X is requantized to Y's parameters (by a table of its codes) and they are joined along
``axis``."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import through_table
from onnxplug.providers.numpy.registry import op


@op("QLinearConcat", domain=DOMAIN)
class QLinearConcat(NumpyKernel):
    def compute(self, y_scale, y_zero_point, *triples):
        if not triples or len(triples) % 3:
            raise ValueError(f"{self.node.describe()}: inputs after Y_scale, Y_zero_point must be "
                             f"(X, X_scale, X_zero_point) triples, got {len(triples)}")
        parts = []
        for x, x_scale, x_zero_point in zip(triples[0::3], triples[1::3], triples[2::3]):
            if x.dtype != y_zero_point.dtype:
                raise ValueError(f"{self.node.describe()}: every X must have Y's type {y_zero_point.dtype}, "
                                 f"got {x.dtype}")
            same = np.array_equal(x_scale, y_scale) and np.array_equal(x_zero_point, y_zero_point)
            parts.append(x if same else
                         through_table(self, x, x_scale, x_zero_point, y_scale, y_zero_point, lambda v: v))
        return np.concatenate(parts, axis=norm_axis(int(self.attr("axis")), parts[0].ndim))
