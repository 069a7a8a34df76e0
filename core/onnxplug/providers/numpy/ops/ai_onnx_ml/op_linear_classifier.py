import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, class_labels, float_rows, post_transform, transform_scores
from onnxplug.providers.numpy.registry import op


@op("LinearClassifier", domain=ML)
class LinearClassifier(NumpyKernel):
    """Scores X @ coefficients.T + intercepts; the label is the best class (onnxruntime's rules).

    With one score column and two labels, the score s > 0 picks labels[1] and Z is [1 - p, p],
    p being s after a LOGISTIC or PROBIT transform (softmaxes of one column are left out).
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._labels, strings = class_labels(self)
        bias = np.asarray(self.attr("intercepts") or [], dtype=np.float32)
        self._coef = np.asarray(self.attr("coefficients"), dtype=np.float32).reshape(max(bias.size, 1), -1).T
        self._bias = bias if bias.size else np.zeros(self._coef.shape[1], np.float32)
        self._binary = self._coef.shape[1] == 1
        if self._binary and len(self._labels) != 2:  # no labels given: "0"/"1" or 0/1
            self._labels = np.array(["0", "1"] if strings else [0, 1], dtype=self._labels.dtype)

    def compute(self, x):
        scores = float_rows(x) @ self._coef + self._bias
        post = self.attr("post_transform", "NONE")
        if self._binary:
            labels = self._labels[(scores[:, 0] > 0).astype(np.int64)]
            p = post_transform(scores, post) if post in ("LOGISTIC", "PROBIT") else scores
            if len(self.attr("classlabels_strings") or self.attr("classlabels_ints") or []) == 2:
                return labels, np.concatenate([1 - p, p], axis=1)
            return labels, p
        return self._labels[np.argmax(scores, axis=1)], transform_scores(scores, post)
