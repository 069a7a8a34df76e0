import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Trilu")
class Trilu(NumpyKernel):
    def compute(self, x, k=None):
        diagonal = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
        # np.triu/np.tril work on the last two axes of a batch
        return np.triu(x, diagonal) if self.attr("upper", 1) else np.tril(x, diagonal)
