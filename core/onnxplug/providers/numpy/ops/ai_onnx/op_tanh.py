import numpy as np

from onnxplug.providers.numpy.ops._mlas_math import mlas_tanh
from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


@op("Tanh")
class Tanh(FloatUnaryKernel):
    """float32: onnxruntime's MLAS approximation (see _mlas_math); other dtypes: np.tanh."""

    def op(self, x):
        return mlas_tanh(x) if x.dtype == np.float32 else np.tanh(x)
