import numpy as np

from onnxplug.providers.numpy.ops._mlas_math import mlas_logistic
from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.registry import op


def sigmoid(x: np.ndarray) -> np.ndarray:
    """float32: onnxruntime's MLAS approximation (see _mlas_math); other dtypes: 1 / (1 + exp(-x))
    in place on one buffer, exp overflow giving the right limit 0."""
    if x.dtype == np.float32:
        return mlas_logistic(x)
    with np.errstate(over="ignore"):
        y = np.negative(x)
        np.exp(y, out=y)
        y += 1
        return np.reciprocal(y, out=y)


@op("Sigmoid")
class Sigmoid(FloatUnaryKernel):
    def op(self, x):
        return sigmoid(x)
