"""Clip: min(max(x, low), high); bounds are attributes before opset 11 (opset 1 and 6), optional
0-d inputs from 11. A missing bound leaves that side open; low above high gives high everywhere,
NaN stays NaN (as onnxruntime)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import ARRAY_OUT, NumpyKernel
from onnxplug.providers.numpy.registry import op

_INFINITE = {"min": -np.inf, "max": np.inf}


@op("Clip", 1, 6, 11, 12, 13)
class Clip(NumpyKernel):
    def compute(self, x, low=None, high=None):
        if self.node.opset < 11:
            low, high = (self.attr(name, _INFINITE[name]) for name in ("min", "max"))
            low, high = _bound(low, x.dtype), _bound(high, x.dtype)
        else:
            low = None if low is None else np.asarray(low, dtype=x.dtype).reshape(())
            high = None if high is None else np.asarray(high, dtype=x.dtype).reshape(())
        y = x if low is None else np.maximum(x, low, out=ARRAY_OUT)
        y = y if high is None else np.minimum(y, high, out=ARRAY_OUT)
        return x.copy() if y is x else y if y.__class__ is np.ndarray else np.asarray(y)


def _bound(value: float, dtype: np.dtype):
    """An attribute bound in x's type; None when it is infinite (no bound on that side)."""
    return None if np.isinf(value) else np.asarray(value, dtype=dtype)
