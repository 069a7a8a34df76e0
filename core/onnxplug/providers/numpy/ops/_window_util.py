"""Shared by HannWindow, HammingWindow and BlackmanWindow: sample positions and output type."""

from __future__ import annotations

import numpy as np

from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel


class WindowKernel(NumpyKernel):
    """A window of ``size`` samples; ``periodic`` windows divide by N, symmetric ones by N - 1."""

    def compute(self, size):
        n = int(np.asarray(size).reshape(-1)[0])
        denom = n if self.attr("periodic", 1) else n - 1
        phase = 2 * np.pi * np.arange(n, dtype=np.float64) / denom if denom else np.zeros(n)
        return np.asarray(self.window(phase), dtype=numpy_dtype(self.attr("output_datatype", 1)))

    def window(self, phase: np.ndarray) -> np.ndarray:
        """The window at phases 2*pi*n/N."""
        raise NotImplementedError
