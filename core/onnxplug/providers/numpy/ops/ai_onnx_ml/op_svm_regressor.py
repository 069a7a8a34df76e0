import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, float_rows, transform_scores
from onnxplug.ml.svm import svm_kernel
from onnxplug.providers.numpy.registry import op


@op("SVMRegressor", domain=ML)
class SVMRegressor(NumpyKernel):
    """sum_i coef_i K(x, sv_i) + rho (linear in x without support vectors); one_class gives +-1."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._coef = np.asarray(self.attr("coefficients"), dtype=np.float32)
        n_sv = self.attr("n_supports", 0)
        self._vectors = np.asarray(self.attr("support_vectors") or [], dtype=np.float32).reshape(n_sv, -1) if n_sv else None
        self._rho = float((self.attr("rho") or [0.0])[0])

    def compute(self, x):
        rows = float_rows(x)
        if self._vectors is None:  # linear mode: coefficients are feature weights
            scores = rows @ self._coef.reshape(-1, 1)
        else:
            k = svm_kernel(self.attr("kernel_type", "LINEAR"), self.attr("kernel_params"), rows, self._vectors)
            scores = k @ self._coef.reshape(-1, 1)
        scores = (scores + self._rho).astype(np.float32)
        if self.attr("one_class", 0):
            return np.where(scores > 0, 1.0, -1.0).astype(np.float32)
        return transform_scores(scores, self.attr("post_transform", "NONE"))
