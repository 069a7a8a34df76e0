import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Det")
class Det(NumpyKernel):
    def compute(self, x):
        # LAPACK works in float32/float64; float16 and bfloat16 go through float32.
        work = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
        return np.asarray(np.linalg.det(work), dtype=x.dtype)
