"""com.microsoft ExpandDims: X with a new axis of size 1 at ``axis`` (an int32 scalar input, negative
counting from the end of the result)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("ExpandDims", domain=DOMAIN)
class ExpandDims(NumpyKernel):
    def compute(self, x, axis):
        a = int(np.asarray(axis).reshape(()))
        if not -x.ndim - 1 <= a <= x.ndim:
            raise ValueError(f"{self.node.describe()}: axis {a} is outside [{-x.ndim - 1}, {x.ndim}]")
        return np.expand_dims(x, a)
