import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import _NATIVE_DTYPES, blas_dtype
from onnxplug.providers.numpy.registry import op


@op("MatMul")
class MatMul(NumpyKernel):
    """numpy.matmul semantics (1-D promotion, batch broadcasting); BLAS for float types,
    float16/bfloat16 accumulated in float32."""

    def compute(self, a, b):
        if a.dtype in _NATIVE_DTYPES:
            out = matmul(a, b)
            return out if out.__class__ is np.ndarray else np.asarray(out)  # 1-D @ 1-D gives a scalar
        dt = blas_dtype(a.dtype)
        if dt == a.dtype:
            return np.asarray(matmul(a, b))
        return matmul(a.astype(dt), b.astype(dt)).astype(a.dtype)
