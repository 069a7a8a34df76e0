"""CumSum / CumProd along an axis given as an input, with ``exclusive`` and ``reverse``."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel


class CumulativeKernel(NumpyKernel):
    """Shared body of CumSum and CumProd; ``ufunc`` is np.add or np.multiply."""

    ufunc: ClassVar[np.ufunc]

    def compute(self, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
        ax = int(np.asarray(axis).reshape(-1)[0])
        ax = ax + x.ndim if ax < 0 else ax
        reverse = bool(self.attr("reverse", 0))
        data = np.flip(x, axis=ax) if reverse else x
        with np.errstate(all="ignore"):
            out = self.ufunc.accumulate(data, axis=ax, dtype=x.dtype)
        if self.attr("exclusive", 0):
            # Shift by one along the axis, starting from the identity (0 for sums, 1 for products).
            shifted = np.full_like(out, self.ufunc.identity)
            lead = [slice(None)] * x.ndim
            lead[ax] = slice(1, None)
            tail = [slice(None)] * x.ndim
            tail[ax] = slice(None, -1)
            shifted[tuple(lead)] = out[tuple(tail)]
            out = shifted
        return np.flip(out, axis=ax).copy() if reverse else out
