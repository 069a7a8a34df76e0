import numpy as np

from onnxplug.ml.scores import ML, float_rows, logistic
from onnxplug.ml.svm import SvmClassifierModel, multiclass_probability, svm_kernel
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SVMClassifier", domain=ML)
class SVMClassifier(NumpyKernel):
    """One-vs-one SVC (votes, optional Platt probabilities) or a linear SVM, with onnxruntime's rules
    for labels and scores."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = SvmClassifierModel.parse(self)

    def compute(self, x):
        m, rows = self._model, float_rows(x)
        if not m.svc:
            return m.outputs(rows, None, None, None)
        k = svm_kernel(m.kernel, m.params, rows, m.vectors)
        pairs = m.pairs()
        c = len(m.labels)
        votes = np.zeros((rows.shape[0], c), dtype=np.int64)
        pair_scores = np.empty((rows.shape[0], len(pairs)), dtype=np.float32)
        s_ = [slice(m.starts[i], m.starts[i + 1]) for i in range(c)]
        for idx, (i, j) in enumerate(pairs):
            s = k[:, s_[i]] @ m.coef[j - 1, s_[i]] + k[:, s_[j]] @ m.coef[i, s_[j]] + m.rho[idx]
            pair_scores[:, idx] = s
            votes[:, i] += s > 0
            votes[:, j] += s <= 0
        probabilities = None
        if m.proba:
            val = np.clip(1 - logistic(pair_scores * m.prob_a[:len(pairs)] + m.prob_b[:len(pairs)]),
                          np.float32(1e-7), np.float32(1 - 1e-7))
            r = np.zeros((rows.shape[0], c, c), dtype=np.float32)
            for idx, (i, j) in enumerate(pairs):
                r[:, i, j], r[:, j, i] = val[:, idx], 1 - val[:, idx]
            probabilities = multiclass_probability(r)
        return m.outputs(rows, pair_scores, np.argmax(votes, axis=1), probabilities)
