import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op


@op("FeatureVectorizer", domain=ML)
class FeatureVectorizer(NumpyKernel):
    """Concatenate the inputs' features into [N, sum(inputdimensions)] float32, cutting or zero-padding each."""

    def compute(self, *inputs):
        dims = self.attr("inputdimensions") or [int(np.prod(a.shape[1:])) if a.ndim > 1 else 1 for a in inputs]
        parts = []
        for a, d in zip(inputs, dims):
            rows = a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(-1, 1)
            rows = rows[:, :d].astype(np.float32)
            if rows.shape[1] < d:
                rows = np.pad(rows, ((0, 0), (0, d - rows.shape[1])))
            parts.append(rows)
        return np.concatenate(parts, axis=1)
