"""com.microsoft Inverse: the inverse of each square matrix in the last two axes (float16 in float32)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("Inverse", domain=DOMAIN)
class Inverse(NumpyKernel):
    def compute(self, x):
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise ValueError(f"{self.node.describe()}: input must be square matrices, got shape {list(x.shape)}")
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        return np.linalg.inv(work).astype(x.dtype, copy=False)
