"""com.microsoft QLinearWhere: Z = where(condition, X, Y) with X and Y requantized to Z's scale and
zero point (per tensor), broadcasting as Where."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear import through_table
from onnxplug.providers.numpy.registry import op


@op("QLinearWhere", domain=DOMAIN)
class QLinearWhere(NumpyKernel):
    def compute(self, condition, x, x_scale, x_zero_point, y, y_scale, y_zero_point, z_scale, z_zero_point):
        if x.dtype != y.dtype or x.dtype != z_zero_point.dtype:
            raise ValueError(f"{self.node.describe()}: X, Y and Z must have one type, got {x.dtype}, {y.dtype} "
                             f"and {z_zero_point.dtype}")
        xq = through_table(self, x, x_scale, x_zero_point, z_scale, z_zero_point, lambda v: v)
        yq = through_table(self, y, y_scale, y_zero_point, z_scale, z_zero_point, lambda v: v)
        return np.where(condition, xq, yq)
