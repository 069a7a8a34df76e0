from onnxplug.ml.linear import LinearModel
from onnxplug.ml.scores import ML, float_rows
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("LinearClassifier", domain=ML)
class LinearClassifier(NumpyKernel):
    """Scores X @ coefficients.T + intercepts; the label is the best class (onnxruntime's rules).

    With one score column and two labels, the score s > 0 picks labels[1] and Z is [1 - p, p],
    p being s after a LOGISTIC or PROBIT transform (softmaxes of one column are left out).
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = LinearModel.classifier(self)

    def compute(self, x):
        return self._model.classify(float_rows(x) @ self._model.coef + self._model.bias)
