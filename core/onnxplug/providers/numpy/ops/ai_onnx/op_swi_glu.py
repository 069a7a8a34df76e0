import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("SwiGLU")
class SwiGLU(NumpyKernel):
    """Swish(a) * b = a * sigmoid(alpha * a) * b, for inputs of one shape and type."""

    def compute(self, a, b):
        if a.shape != b.shape:
            raise ValueError(f"SwiGLU needs inputs of one shape, got {list(a.shape)} and {list(b.shape)}")
        x = widen(a)
        gate = x / (1 + np.exp(-np.asarray(self.attr("alpha", 1.0), x.dtype) * x))
        return np.asarray(gate * widen(b), dtype=a.dtype)
