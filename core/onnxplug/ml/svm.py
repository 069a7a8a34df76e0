"""SVM helpers: kernels and libsvm's pairwise-coupling probabilities, vectorised over samples."""

from __future__ import annotations

import numpy as np


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

    Iterates all samples together (at most 100 sweeps); finished samples stop changing.
    """
    n, k = r.shape[0], r.shape[1]
    f32 = np.float32
    q = -r.transpose(0, 2, 1) * r  # Q[i, j] = -r[j, i] r[i, j]
    diag = (r.transpose(0, 2, 1) ** 2).sum(axis=2) - (np.diagonal(r, axis1=1, axis2=2) ** 2)
    idx = np.arange(k)
    q[:, idx, idx] = diag
    q = q.astype(f32)
    p = np.full((n, k), 1 / k, dtype=f32)
    eps = f32(0.005 / k)
    active = np.ones(n, dtype=bool)
    for _ in range(100):
        qp = np.einsum("nij,nj->ni", q, p)
        pqp = (p * qp).sum(axis=1)
        active &= np.abs(qp - pqp[:, None]).max(axis=1) >= eps
        if not active.any():
            break
        a = active
        for i in range(k):
            diff = (-qp[a, i] + pqp[a]) / q[a, i, i]
            p[a, i] += diff
            pqp[a] = (pqp[a] + diff * (diff * q[a, i, i] + 2 * qp[a, i])) / (1 + diff) / (1 + diff)
            qp[a] = (qp[a] + diff[:, None] * q[a, i, :]) / (1 + diff)[:, None]
            p[a] /= (1 + diff)[:, None]
    return p
