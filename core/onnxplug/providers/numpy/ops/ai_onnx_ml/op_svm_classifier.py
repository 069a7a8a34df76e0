import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, class_labels, float_rows, logistic, post_transform
from onnxplug.ml.svm import multiclass_probability, svm_kernel
from onnxplug.providers.numpy.registry import op


@op("SVMClassifier", domain=ML)
class SVMClassifier(NumpyKernel):
    """One-vs-one SVC (votes, optional Platt probabilities) or a linear SVM, with onnxruntime's rules
    for labels and scores."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._labels, strings = class_labels(self)
        self._fallback = np.array(["0", "1"] if strings else [0, 1], dtype=self._labels.dtype)
        c = len(self._labels)
        self._coef = np.asarray(self.attr("coefficients"), dtype=np.float32)
        self._rho = np.asarray(self.attr("rho"), dtype=np.float32)
        self._prob_a = np.asarray(self.attr("prob_a") or [], dtype=np.float32)
        self._prob_b = np.asarray(self.attr("prob_b") or [], dtype=np.float32)
        per_class = np.asarray(self.attr("vectors_per_class") or [], dtype=np.int64)
        self._svc = int(per_class.sum()) > 0
        if self._svc:
            self._vectors = np.asarray(self.attr("support_vectors"), dtype=np.float32).reshape(per_class.sum(), -1)
            self._coef = self._coef.reshape(c - 1, -1)
            starts = np.concatenate([[0], np.cumsum(per_class)])
            self._slices = [slice(starts[i], starts[i + 1]) for i in range(c)]
        else:
            self._coef = self._coef.reshape(c, -1)
        self._all_positive = bool((self._coef >= 0).all())

    def compute(self, x):
        rows, c = float_rows(x), len(self._labels)
        post = self.attr("post_transform", "NONE")
        proba = self._prob_a.size > 0
        if not self._svc:
            scores = rows @ self._coef.T + self._rho[0]
            best = np.argmax(scores, axis=1)
            return self._choose(best, scores.max(axis=1), proba), self._finish(scores, post, -1)
        k = svm_kernel(self.attr("kernel_type", "LINEAR"), self.attr("kernel_params"), rows, self._vectors)
        pairs = [(i, j) for i in range(c - 1) for j in range(i + 1, c)]
        votes = np.zeros((rows.shape[0], c), dtype=np.int64)
        pair_scores = np.empty((rows.shape[0], len(pairs)), dtype=np.float32)
        for idx, (i, j) in enumerate(pairs):
            si, sj = self._slices[i], self._slices[j]
            s = k[:, si] @ self._coef[j - 1, si] + k[:, sj] @ self._coef[i, sj] + self._rho[idx]
            pair_scores[:, idx] = s
            votes[:, i] += s > 0
            votes[:, j] += s <= 0
        best = np.argmax(votes, axis=1)
        labels = self._choose(best, np.zeros(rows.shape[0], np.float32), proba)
        if proba:
            val = np.clip(1 - logistic(pair_scores * self._prob_a[:len(pairs)] + self._prob_b[:len(pairs)]),
                          np.float32(1e-7), np.float32(1 - 1e-7))
            r = np.zeros((rows.shape[0], c, c), dtype=np.float32)
            for idx, (i, j) in enumerate(pairs):
                r[:, i, j], r[:, j, i] = val[:, idx], 1 - val[:, idx]
            return labels, self._finish(multiclass_probability(r), post, -1)
        return labels, self._finish(pair_scores, post, (2 if post == "NONE" else 0) if c <= 2 else -1)

    def _choose(self, best, max_weight, proba):
        """onnxruntime's label choice; in SVC mode max_weight is 0, so votes decide."""
        if len(self._labels) != 2:
            return self._labels[best]
        if proba:
            return self._labels[best]
        win = (max_weight >= 0.5) if self._all_positive else (max_weight > 0)
        return np.where(win, self._labels[1], self._labels[best])

    def _finish(self, scores, post, extra):
        """Post-transform; a single pairwise score becomes two columns (``extra`` as onnxruntime's)."""
        if scores.shape[1] > 1:
            return post_transform(scores, post)
        s = scores[:, 0]
        if post == "PROBIT":
            return post_transform(scores, post)
        if extra in (0, 1):
            p = logistic(s) if post == "LOGISTIC" else s
            return np.stack([1 - p, p], axis=1).astype(np.float32)
        if post == "LOGISTIC":
            return np.stack([logistic(-s), logistic(s)], axis=1)
        return np.stack([-s, s], axis=1).astype(np.float32)
