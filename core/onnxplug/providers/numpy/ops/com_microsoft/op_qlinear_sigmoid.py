"""com.microsoft QLinearSigmoid: Y = quantize(sigmoid(dequantize(X))), by a table of every code."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import through_table
from onnxplug.providers.numpy.registry import op


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


@op("QLinearSigmoid", domain=DOMAIN)
class QLinearSigmoid(NumpyKernel):
    def compute(self, x, x_scale, x_zero_point, y_scale, y_zero_point=None):
        return through_table(self, x, x_scale, x_zero_point, y_scale, y_zero_point, _sigmoid)
