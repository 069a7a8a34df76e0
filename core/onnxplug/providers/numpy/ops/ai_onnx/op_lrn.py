import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("LRN")
class LRN(NumpyKernel):
    """x / (bias + alpha / size * sum of x^2 over a channel window) ** beta (sum of shifted slices)."""

    def compute(self, x):
        xw = widen(x)
        size = int(self.attr("size"))
        alpha = float(self.attr("alpha", 1e-4))
        beta = float(self.attr("beta", 0.75))
        bias = float(self.attr("bias", 1.0))
        lo = (size - 1) // 2
        c = x.shape[1]
        sq = np.square(xw)
        padded = np.zeros((x.shape[0], c + size - 1) + x.shape[2:], dtype=sq.dtype)
        padded[:, lo:lo + c] = sq
        window = padded[:, 0:c].copy()
        for k in range(1, size):
            window += padded[:, k:k + c]
        y = xw / (xw.dtype.type(bias) + xw.dtype.type(alpha / size) * window) ** xw.dtype.type(beta)
        return np.asarray(y, dtype=x.dtype)
