"""SVM helpers: kernels and libsvm's pairwise-coupling probabilities, vectorised over samples, and
an SVMClassifier's attributes with onnxruntime's rules for its labels and scores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onnxplug.ml.scores import class_labels, logistic, post_transform, text_attr, transform_scores


def svm_kernel(name: str, params, x: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """The [N, V] kernel matrix between rows of ``x`` and the support ``vectors`` (float32 in, out)."""
    gamma, coef0, degree = (list(params) + [0.0, 0.0, 0.0])[:3] if params else (0.0, 0.0, 0.0)
    if name == "RBF":
        diff = x[:, None, :] - vectors[None, :, :]  # exact squared distances, as onnxruntime sums them
        return np.exp(-np.float32(gamma) * np.einsum("nvf,nvf->nv", diff, diff)).astype(np.float32)
    dot = x @ vectors.T
    if name == "LINEAR":
        return dot
    if name == "POLY":
        return ((np.float32(gamma) * dot + np.float32(coef0)) ** int(degree)).astype(np.float32)
    if name == "SIGMOID":
        return np.tanh(np.float32(gamma) * dot + np.float32(coef0)).astype(np.float32)
    raise ValueError(f"unknown SVM kernel_type {name!r}")


def multiclass_probability(r: np.ndarray) -> np.ndarray:
    """Class probabilities from pairwise ones r[n, i, j] (Wu, Lin & Weng's method 2, as libsvm).

    Iterates all samples together (at most 100 sweeps); a finished sample's step is 0, which leaves
    its p, Qp and pQp exactly as they are (the terms stay finite: Q's diagonal is positive).
    """
    n, k = r.shape[0], r.shape[1]
    f32 = np.float32
    q = -r.transpose(0, 2, 1) * r  # Q[i, j] = -r[j, i] r[i, j]
    diag = (r.transpose(0, 2, 1) ** 2).sum(axis=2) - (np.diagonal(r, axis1=1, axis2=2) ** 2)
    idx = np.arange(k)
    q[:, idx, idx] = diag
    q = q.astype(f32)
    # Row state [p | Qp]; step i adds diff * step_i[i] (e_i on p, Q[i, :] on Qp), then divides by 1 + diff.
    q_ii = [np.ascontiguousarray(q[:, i, i]) for i in range(k)]
    step_i = np.zeros((k, n, 2 * k), dtype=f32)
    step_i[idx, :, idx] = 1
    step_i[:, :, k:] = q.transpose(1, 0, 2)
    state = np.empty((n, 2 * k), dtype=f32)
    state[:, :k] = 1 / k
    p, qp = state[:, :k], state[:, k:]
    eps = f32(0.005 / k)
    active = np.ones(n, dtype=bool)
    zero = f32(0)
    for _ in range(100):
        np.einsum("nij,nj->ni", q, p, out=qp)
        pqp = (p * qp).sum(axis=1)
        active &= np.abs(qp - pqp[:, None]).max(axis=1) >= eps
        if not active.any():
            break
        for i in range(k):
            qp_i = state[:, k + i]
            diff = np.where(active, (pqp - qp_i) / q_ii[i], zero)
            one = 1 + diff
            pqp = (pqp + diff * (diff * q_ii[i] + 2 * qp_i)) / one / one
            state = (state + diff[:, None] * step_i[i]) / one[:, None]
        p, qp = state[:, :k], state[:, k:]
    return np.ascontiguousarray(p)


@dataclass
class SvmClassifierModel:
    """An SVMClassifier's attributes as arrays, and onnxruntime's rules for its labels and scores.

    In SVC mode (support vectors given) class ``i``'s vectors are ``vectors[starts[i]:starts[i + 1]]``
    and ``coef`` is [classes - 1, vectors]; else the model is linear and ``coef`` is [classes, features].
    """

    labels: np.ndarray
    fallback: np.ndarray  # the labels a single-score model picks between when none are given
    coef: np.ndarray  # float32
    rho: np.ndarray  # float32
    prob_a: np.ndarray  # float32, empty without probabilities
    prob_b: np.ndarray
    svc: bool
    vectors: np.ndarray | None  # float32 [vectors, features]
    starts: np.ndarray  # int64 [classes + 1]
    kernel: str
    params: tuple[float, float, float]  # gamma, coef0, degree
    post: str
    all_positive: bool

    @classmethod
    def parse(cls, kernel) -> SvmClassifierModel:
        a = kernel.attr
        labels, strings = class_labels(kernel)
        c = len(labels)
        coef = np.asarray(a("coefficients"), dtype=np.float32)
        per_class = np.asarray(a("vectors_per_class") or [], dtype=np.int64)
        svc = int(per_class.sum()) > 0
        vectors = None
        if svc:
            vectors = np.asarray(a("support_vectors"), dtype=np.float32).reshape(per_class.sum(), -1)
            coef = coef.reshape(c - 1, -1)
        else:
            coef = coef.reshape(c, -1)
        params = tuple(float(p) for p in (list(a("kernel_params") or []) + [0.0, 0.0, 0.0])[:3])
        return cls(labels, np.array(["0", "1"] if strings else [0, 1], dtype=labels.dtype), coef,
                   np.asarray(a("rho"), dtype=np.float32), np.asarray(a("prob_a") or [], dtype=np.float32),
                   np.asarray(a("prob_b") or [], dtype=np.float32), svc, vectors,
                   np.concatenate([[0], np.cumsum(per_class)]).astype(np.int64),
                   text_attr(a("kernel_type"), "LINEAR"), params, text_attr(a("post_transform"), "NONE"),
                   bool((coef >= 0).all()))

    @property
    def proba(self) -> bool:
        return self.prob_a.size > 0

    def pairs(self) -> list[tuple[int, int]]:
        c = len(self.labels)
        return [(i, j) for i in range(c - 1) for j in range(i + 1, c)]

    def choose(self, best: np.ndarray, max_weight: np.ndarray) -> np.ndarray:
        """onnxruntime's label choice; in SVC mode max_weight is 0, so votes decide."""
        if len(self.labels) != 2 or self.proba:
            return self.labels[best]
        win = (max_weight >= 0.5) if self.all_positive else (max_weight > 0)
        return np.where(win, self.labels[1], self.labels[best])

    def finish(self, scores: np.ndarray, extra: int) -> np.ndarray:
        """Post-transform; a single pairwise score becomes two columns (``extra`` as onnxruntime's)."""
        post = self.post
        if scores.shape[1] > 1:
            return post_transform(scores, post)
        s = scores[:, 0]
        if post == "PROBIT":  # onnxruntime writes the first column only; the second is left 0 here
            return np.stack([post_transform(scores, post)[:, 0], np.zeros_like(s)], axis=1)
        if extra in (0, 1):
            p = logistic(s) if post == "LOGISTIC" else s
            return np.stack([1 - p, p], axis=1).astype(np.float32)
        if post == "LOGISTIC":
            return np.stack([logistic(-s), logistic(s)], axis=1)
        return np.stack([-s, s], axis=1).astype(np.float32)

    def pair_extra(self) -> int:
        """``extra`` of pairwise scores without probabilities (onnxruntime's two-class write-out)."""
        return (2 if self.post == "NONE" else 0) if len(self.labels) <= 2 else -1

    def outputs(self, rows: np.ndarray, pair_scores: np.ndarray | None, best: np.ndarray | None,
                probabilities: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Labels and scores: from the linear model on ``rows``, or from SVC pairwise scores, votes'
        ``best`` and (with prob_a/prob_b) the coupled probabilities."""
        if not self.svc:
            scores = rows @ self.coef.T + self.rho[0]
            return self.choose(np.argmax(scores, axis=1), scores.max(axis=1)), self.finish(scores, -1)
        labels = self.choose(best, np.zeros(best.shape[0], np.float32))
        if probabilities is not None:
            return labels, self.finish(probabilities, -1)
        return labels, self.finish(pair_scores, self.pair_extra())


@dataclass
class SvmRegressorModel:
    """An SVMRegressor's attributes: sum_i coef_i K(x, sv_i) + rho, or linear in x without support
    vectors; ``one_class`` gives +-1."""

    coef: np.ndarray  # float32
    vectors: np.ndarray | None  # float32 [n_supports, features]
    rho: float
    kernel: str
    params: tuple[float, float, float]
    post: str
    one_class: bool

    @classmethod
    def parse(cls, kernel) -> SvmRegressorModel:
        a = kernel.attr
        n_sv = a("n_supports", 0)
        vectors = np.asarray(a("support_vectors") or [], dtype=np.float32).reshape(n_sv, -1) if n_sv else None
        params = tuple(float(p) for p in (list(a("kernel_params") or []) + [0.0, 0.0, 0.0])[:3])
        return cls(np.asarray(a("coefficients"), dtype=np.float32), vectors, float((a("rho") or [0.0])[0]),
                   text_attr(a("kernel_type"), "LINEAR"), params, text_attr(a("post_transform"), "NONE"),
                   bool(a("one_class", 0)))

    def finish(self, scores: np.ndarray) -> np.ndarray:
        """The output from float32 scores [N, 1] (rho included)."""
        if self.one_class:
            return np.where(scores > 0, 1.0, -1.0).astype(np.float32)
        return transform_scores(scores, self.post)
