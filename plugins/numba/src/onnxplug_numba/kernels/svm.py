"""Compiled SVM kernels: kernel values, one-vs-one pairwise scores, votes and libsvm's
pairwise-coupling probabilities, one row at a time.

Kernel values and scores are float32 (sums of products accumulate in float64 and are rounded
once); the coupling iterates in float32 exactly as onnxruntime's ``multiclass_probability``, so it
stops after the same number of sweeps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: kernel_type codes
LINEAR, POLY, RBF, SIGMOID = range(4)
KERNELS = {"LINEAR": LINEAR, "POLY": POLY, "RBF": RBF, "SIGMOID": SIGMOID}


@njit(nogil=True, cache=True)
def kernel_values(x, r, vectors, kind, gamma, coef0, degree, out):
    """out[v] = K(x[r], vectors[v]) in float32."""
    features = vectors.shape[1]
    for v in range(vectors.shape[0]):
        acc = 0.0
        if kind == RBF:
            for f in range(features):
                d = np.float32(x[r, f] - vectors[v, f])
                acc += d * d
            out[v] = np.exp(-gamma * np.float32(acc))
        else:
            for f in range(features):
                acc += np.float32(x[r, f]) * vectors[v, f]
            dot = np.float32(acc)
            if kind == LINEAR:
                out[v] = dot
            elif kind == POLY:
                out[v] = (gamma * dot + coef0) ** degree
            else:
                out[v] = np.tanh(gamma * dot + coef0)


@njit(nogil=True, cache=True)
def _logistic(v):
    e = np.float32(1.0) / (np.float32(1.0) + np.exp(-abs(v)))
    return np.float32(1.0) - e if v < 0 else e


@njit(nogil=True, cache=True)
def couple(r, p, q, qp):
    """Class probabilities ``p`` from pairwise ones ``r`` [k, k] (Wu, Lin & Weng's method 2, libsvm's
    and onnxruntime's loop, in float32); ``q`` and ``qp`` are scratch."""
    k = p.size
    one = np.float32(1.0)
    for i in range(k):
        p[i] = one / np.float32(k)
        q[i, i] = np.float32(0.0)
        for j in range(i):
            q[i, i] += r[j, i] * r[j, i]
            q[i, j] = q[j, i]
        for j in range(i + 1, k):
            q[i, i] += r[j, i] * r[j, i]
            q[i, j] = -r[j, i] * r[i, j]
    eps = np.float32(0.005) / np.float32(k)
    for _ in range(100):
        pqp = np.float32(0.0)
        for i in range(k):
            qp[i] = np.float32(0.0)
            for j in range(k):
                qp[i] += q[i, j] * p[j]
            pqp += p[i] * qp[i]
        worst = np.float32(0.0)
        for i in range(k):
            worst = max(worst, abs(qp[i] - pqp))
        if worst < eps:
            break
        for i in range(k):
            diff = (-qp[i] + pqp) / q[i, i]
            p[i] += diff
            pqp = (pqp + diff * (diff * q[i, i] + np.float32(2.0) * qp[i])) / (one + diff) / (one + diff)
            for j in range(k):
                qp[j] = (qp[j] + diff * q[i, j]) / (one + diff)
                p[j] /= one + diff


@njit(nogil=True, cache=True)
def svc_rows(x, vectors, kind, gamma, coef0, degree, coef, starts, rho, prob_a, prob_b, scores, best, probs):
    """One-vs-one SVC over the rows of ``x``: pairwise scores [rows, pairs], the most-voted class and,
    when ``prob_a`` is not empty, the coupled probabilities [rows, classes]."""
    classes = starts.size - 1
    kv = np.empty(vectors.shape[0], dtype=np.float32)
    votes = np.empty(classes, dtype=np.int64)
    pair_p = np.zeros((classes, classes), dtype=np.float32)
    q = np.zeros((classes, classes), dtype=np.float32)
    qp = np.zeros(classes, dtype=np.float32)
    lo, hi = np.float32(1e-7), np.float32(1 - 1e-7)
    for r in range(x.shape[0]):
        kernel_values(x, r, vectors, kind, gamma, coef0, degree, kv)
        votes[:] = 0
        idx = 0
        for i in range(classes - 1):
            for j in range(i + 1, classes):
                acc = 0.0
                for v in range(starts[i], starts[i + 1]):
                    acc += kv[v] * coef[j - 1, v]
                for v in range(starts[j], starts[j + 1]):
                    acc += kv[v] * coef[i, v]
                s = np.float32(acc) + rho[idx]
                scores[r, idx] = s
                if s > 0:
                    votes[i] += 1
                else:
                    votes[j] += 1
                if prob_a.size:
                    val = np.float32(1.0) - _logistic(s * prob_a[idx] + prob_b[idx])
                    val = min(max(val, lo), hi)
                    pair_p[i, j] = val
                    pair_p[j, i] = np.float32(1.0) - val
                idx += 1
        top = 0
        for c in range(1, classes):
            if votes[c] > votes[top]:
                top = c
        best[r] = top
        if prob_a.size:
            couple(pair_p, probs[r], q, qp)


@njit(nogil=True, cache=True)
def svr_rows(x, vectors, kind, gamma, coef0, degree, coef, rho, out):
    """out[r] = sum_v coef[v] K(x[r], vectors[v]) + rho, in float32."""
    kv = np.empty(vectors.shape[0], dtype=np.float32)
    for r in range(x.shape[0]):
        kernel_values(x, r, vectors, kind, gamma, coef0, degree, kv)
        acc = 0.0
        for v in range(kv.size):
            acc += kv[v] * coef[v]
        out[r] = np.float32(np.float32(acc) + rho)
