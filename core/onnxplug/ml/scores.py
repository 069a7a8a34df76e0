"""Shared by the ai.onnx.ml kernels: 2-D views of inputs, label lookups and score post-transforms.

Post-transforms follow onnxruntime's CPU kernels (ml_common.h), which the models these ops come
from (scikit-learn, LightGBM, XGBoost converters) are validated against.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from onnxplug.ml import ML  # noqa: F401  (re-exported for the kernels)


def as_rows(x: np.ndarray) -> np.ndarray:
    """A [N, F] view: a 1-D input is one row (onnxruntime's convention for ml ops)."""
    if x.ndim == 1:
        return x.reshape(1, -1)
    if x.ndim != 2:
        raise ValueError(f"expected a 1-D or 2-D input, got shape {list(x.shape)}")
    return x


def float_rows(x: np.ndarray) -> np.ndarray:
    """``as_rows(x)`` in float32, the type ml kernels compute and return scores in."""
    return as_rows(x).astype(np.float32)


def lookup(values: np.ndarray, keys: Sequence[Any], results: np.ndarray, default: Any) -> np.ndarray:
    """``results[i]`` where ``values == keys[i]`` (first match), ``default`` elsewhere; any shape.

    Distinct input values are looked up once (``np.unique``), so strings cost one dict probe each.
    """
    table: dict[Any, int] = {}
    for i, k in enumerate(keys):
        table.setdefault(_key(k), i)
    uniq, inverse = np.unique(values.reshape(-1), return_inverse=True)
    pos = np.array([table.get(_key(u), -1) for u in uniq.tolist()], dtype=np.int64)
    out = np.where(pos >= 0, results[np.maximum(pos, 0)] if len(results) else default, default)
    return np.asarray(out[inverse].reshape(values.shape), dtype=results.dtype)


def _key(k: Any) -> Any:
    if isinstance(k, float) and k != k:  # NaN keys match NaN values
        return "__nan__"
    return k


def erf_inv(x: np.ndarray) -> np.ndarray:
    """onnxruntime's closed-form erf^-1 approximation (Winitzki), in float32."""
    x = x.astype(np.float32)
    sgn = np.where(x < 0, np.float32(-1), np.float32(1))
    t = (1 - x) * (1 + x)
    with np.errstate(divide="ignore", invalid="ignore"):
        log = np.log(t)
        v = np.float32(2 / (np.pi * 0.147)) + np.float32(0.5) * log
        v2 = np.float32(1 / 0.147) * log
        return sgn * np.sqrt(-v + np.sqrt(v * v - v2))


def logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) without overflow, in float32."""
    v = 1 / (1 + np.exp(-np.abs(x)))
    return np.where(x < 0, 1 - v, v).astype(np.float32)


def post_transform(scores: np.ndarray, name: str) -> np.ndarray:
    """Apply NONE / LOGISTIC / SOFTMAX / SOFTMAX_ZERO / PROBIT row-wise to [N, C] float32 scores."""
    s = scores.astype(np.float32)
    if name == "NONE":
        return s
    if name == "PROBIT":
        return (np.float32(np.sqrt(2)) * erf_inv(2 * s - 1)).astype(np.float32)
    if name == "LOGISTIC":
        return logistic(s)
    if name == "SOFTMAX":
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    if name == "SOFTMAX_ZERO":  # zeros stay zero (they do not take part in the sum)
        nonzero = np.abs(s) > 1e-7
        m = s.max(axis=1, keepdims=True)
        e = np.where(nonzero, np.exp(s - m), s * np.exp(-m))
        total = np.where(nonzero, e, 0).sum(axis=1, keepdims=True)
        return (e / total).astype(np.float32)
    raise ValueError(f"unknown post_transform {name!r}")


def transform_scores(scores: np.ndarray, name: str) -> np.ndarray:
    """onnxruntime's batched post-transform: a single score column only takes PROBIT."""
    if scores.shape[1] == 1 and name != "PROBIT":
        return scores.astype(np.float32)
    return post_transform(scores, name)


def class_labels(kernel: Any) -> tuple[np.ndarray, bool]:
    """The ``classlabels_strings`` (as an object array) or ``classlabels_int64s``/``classlabels_ints``."""
    strings = kernel.attr("classlabels_strings")
    if strings:
        return np.array(strings, dtype=object), True
    ints = kernel.attr("classlabels_int64s") or kernel.attr("classlabels_ints") or []
    return np.array(ints, dtype=np.int64), False


def text_attr(value: Any, default: str) -> str:
    """A string attribute's value (bytes decoded), or ``default`` when absent."""
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)
