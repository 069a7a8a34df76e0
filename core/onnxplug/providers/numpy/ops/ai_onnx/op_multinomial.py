import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._random_util import generator, random_dtype
from onnxplug.providers.numpy.registry import op


@op("Multinomial")
class Multinomial(NumpyKernel):
    """``sample_size`` class indices per row of unnormalised log-probabilities [batch, classes]."""

    def compute(self, x):
        logits = x.astype(np.float64)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        cdf = np.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]
        u = generator(self).random((x.shape[0], self.attr("sample_size", 1)))
        # Inverse CDF for all rows at once: offset row b by b so one sorted array holds every row.
        rows = np.arange(x.shape[0])[:, None]
        idx = np.searchsorted((cdf + rows).ravel(), (u + rows).ravel(), side="right").reshape(u.shape)
        idx = idx - rows * x.shape[1]
        return np.minimum(idx, x.shape[1] - 1).astype(random_dtype(self, default=6))
