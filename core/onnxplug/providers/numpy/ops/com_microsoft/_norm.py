"""Row normalizations shared by the com.microsoft layer-norm family: LayerNorm or RMSNorm (the
"simplified" form) over the last axis or trailing axes, computed in float32 or wider as onnxruntime
does, with the statistics it can return (mean, 1 / std) kept with a trailing axis of 1."""

from __future__ import annotations

import numpy as np


def normalize_rows(total: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, epsilon: float,
                   simplified: bool, first_axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, mean, inv_std)``: y in total's dtype, mean and inv_std float32 (float64 for float64
    input) with the normalized axes kept as 1. The simplified form divides by the root mean square
    and returns a zero mean, as onnxruntime does."""
    work = total.astype(np.float32) if total.dtype != np.float64 else total
    axes = tuple(range(first_axis % max(total.ndim, 1), total.ndim))
    if simplified:
        mean = np.zeros(work.shape[:axes[0]] + (1,) * len(axes), dtype=work.dtype)
        centered = work
    else:
        mean = work.mean(axis=axes, keepdims=True)
        centered = work - mean
    inv_std = np.mean(np.square(centered), axis=axes, keepdims=True)
    inv_std += work.dtype.type(epsilon)
    np.sqrt(inv_std, out=inv_std)
    np.reciprocal(inv_std, out=inv_std)
    y = centered * inv_std
    y *= gamma.astype(work.dtype, copy=False)
    if beta is not None:
        y += beta.astype(work.dtype, copy=False)
    return y.astype(total.dtype, copy=False), mean, inv_std


def check_vector(kernel, name: str, value: np.ndarray | None, width: int) -> None:
    """Refuse a gamma / beta / bias that is not a vector of the hidden size."""
    if value is not None and value.shape != (width,):
        raise ValueError(f"{kernel.node.describe()}: {name} must have shape [{width}], got {list(value.shape)}")
