import numpy as np

from onnxplug.ml.scores import ML, float_rows, logistic
from onnxplug.ml.svm import SvmClassifierModel, multiclass_probability, svm_kernel
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SVMClassifier", domain=ML)
class SVMClassifier(NumpyKernel):
    """One-vs-one SVC (votes, optional Platt probabilities) or a linear SVM, with onnxruntime's rules
    for labels and scores.

    Each pair's kernel columns and coefficients are sliced once; votes are one integer product of the
    pairs' signs; the pairwise probability matrix is filled by two flat index writes.
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._model = m = SvmClassifierModel.parse(self)
        if not m.svc:
            return
        c, pairs = len(m.labels), m.pairs()
        cls = [slice(int(m.starts[i]), int(m.starts[i + 1])) for i in range(c)]
        self._terms = [(cls[i], np.ascontiguousarray(m.coef[j - 1, cls[i]]), cls[j],
                        np.ascontiguousarray(m.coef[i, cls[j]]), m.rho[idx]) for idx, (i, j) in enumerate(pairs)]
        first, second = np.zeros((len(pairs), c), np.int64), np.zeros((len(pairs), c), np.int64)
        for idx, (i, j) in enumerate(pairs):
            first[idx, i], second[idx, j] = 1, 1
        self._first, self._second = first, second
        flat = np.array([i * c + j for i, j in pairs], dtype=np.int64)
        self._upper, self._lower = flat, np.array([j * c + i for i, j in pairs], dtype=np.int64)
        n_pairs = len(pairs)
        self._prob = (m.prob_a[:n_pairs], m.prob_b[:n_pairs]) if m.proba else None

    def compute(self, x):
        m, rows = self._model, float_rows(x)
        if not m.svc:
            return m.outputs(rows, None, None, None)
        k = svm_kernel(m.kernel, m.params, rows, m.vectors)
        n, c = rows.shape[0], len(m.labels)
        pair_scores = np.empty((n, len(self._terms)), dtype=np.float32)
        for idx, (si, ci, sj, cj, rho) in enumerate(self._terms):
            pair_scores[:, idx] = k[:, si] @ ci + k[:, sj] @ cj + rho
        # s > 0 votes for the pair's first class, s <= 0 for its second (NaN for neither).
        votes = (pair_scores > 0).astype(np.int64) @ self._first + (pair_scores <= 0).astype(np.int64) @ self._second
        probabilities = None
        if self._prob is not None:
            a, b = self._prob
            val = np.clip(1 - logistic(pair_scores * a + b), np.float32(1e-7), np.float32(1 - 1e-7))
            r = np.zeros((n, c * c), dtype=np.float32)
            r[:, self._upper], r[:, self._lower] = val, 1 - val
            probabilities = multiclass_probability(r.reshape(n, c, c))
        return m.outputs(rows, pair_scores, np.argmax(votes, axis=1), probabilities)
