"""Elementwise math of onnxruntime's legacy default-domain ops (experimental ops of early onnx
versions, no schema in today's onnx, still run by onnxruntime)."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.ops._nn_util import widen


def elementwise(x: np.ndarray, fn) -> np.ndarray:
    """``fn`` of x in its compute dtype (float16 in float32), back in x's dtype."""
    return np.asarray(fn(widen(x)), dtype=x.dtype)
