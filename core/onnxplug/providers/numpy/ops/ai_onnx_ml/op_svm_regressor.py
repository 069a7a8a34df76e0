import numpy as np

from onnxplug.ml.scores import ML, float_rows
from onnxplug.ml.svm import SvmRegressorModel, svm_kernel
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SVMRegressor", domain=ML)
class SVMRegressor(NumpyKernel):
    """sum_i coef_i K(x, sv_i) + rho (linear in x without support vectors); one_class gives +-1."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = SvmRegressorModel.parse(self)

    def compute(self, x):
        m, rows = self._model, float_rows(x)
        if m.vectors is None:  # linear mode: coefficients are feature weights
            scores = rows @ m.coef.reshape(-1, 1)
        else:
            scores = svm_kernel(m.kernel, m.params, rows, m.vectors) @ m.coef.reshape(-1, 1)
        return m.finish((scores + m.rho).astype(np.float32))
