"""com.microsoft CDist: pairwise distances of the rows of A [N, K] and B [M, K], [N, M], with metric
"sqeuclidean" (default) or "euclidean"."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op

_METRICS = ("sqeuclidean", "euclidean")


@op("CDist", domain=DOMAIN)
class CDist(NumpyKernel):
    def compute(self, a, b):
        metric = self.attr("metric", "sqeuclidean")
        if metric not in _METRICS:
            raise ValueError(f"{self.node.describe()}: metric {metric!r} is none of {', '.join(_METRICS)}")
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
            raise ValueError(f"{self.node.describe()}: A and B must be [N, K] and [M, K], got "
                             f"{list(a.shape)} and {list(b.shape)}")
        diff = a[:, None, :].astype(np.float64) - b[None, :, :]
        d = np.einsum("nmk,nmk->nm", diff, diff)
        return (np.sqrt(d) if metric == "euclidean" else d).astype(a.dtype)
