from onnxplug.ml.linear import LinearModel
from onnxplug.ml.scores import ML, float_rows, transform_scores
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("LinearRegressor", domain=ML)
class LinearRegressor(NumpyKernel):
    """[N, targets] = X @ coefficients.T + intercepts, then the post-transform."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = LinearModel.regressor(self)

    def compute(self, x):
        m = self._model
        return transform_scores(float_rows(x) @ m.coef + m.bias, m.post)
