import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, float_rows, transform_scores
from onnxplug.providers.numpy.registry import op


@op("LinearRegressor", domain=ML)
class LinearRegressor(NumpyKernel):
    """[N, targets] = X @ coefficients.T + intercepts, then the post-transform."""

    def __init__(self, node, context):
        super().__init__(node, context)
        targets = self.attr("targets", 1)
        self._coef = np.asarray(self.attr("coefficients"), dtype=np.float32).reshape(targets, -1).T
        self._bias = np.asarray(self.attr("intercepts") or [0.0] * targets, dtype=np.float32)

    def compute(self, x):
        scores = float_rows(x) @ self._coef + self._bias
        return transform_scores(scores, self.attr("post_transform", "NONE"))
