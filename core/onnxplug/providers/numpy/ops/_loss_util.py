"""Negative log-likelihood shared by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from __future__ import annotations

import numpy as np


def nll_loss(logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None, ignore_index: int | None,
             reduction: str) -> np.ndarray:
    """-logp[n, target[n, d], d] weighted by weight[target], ignoring ``ignore_index`` targets.

    ``logp`` is [N, C, d1, ...] and ``target`` [N, d1, ...]; ``mean`` divides by the total weight
    of the targets that count.
    """
    target = target.astype(np.int64)
    ignored = (target == ignore_index) if ignore_index is not None else np.zeros(target.shape, bool)
    classes = logp.shape[1]
    safe = np.where(ignored, 0, target)
    if ((safe < 0) | (safe >= classes)).any():
        raise IndexError(f"target class out of range [0, {classes}) (ignore_index={ignore_index})")
    picked = np.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
    w = np.ones(target.shape, logp.dtype) if weight is None else weight.astype(logp.dtype)[safe]
    w = np.where(ignored, 0, w).astype(logp.dtype)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(loss.sum(), dtype=logp.dtype)
    if reduction == "mean":
        return np.asarray(loss.sum() / w.sum(), dtype=logp.dtype)
    raise ValueError(f"unknown reduction {reduction!r} (none, sum or mean)")
