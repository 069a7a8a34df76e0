"""ArgMax / ArgMin: the index along ``axis``, first or last among ties, as int64."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel


class ArgReduceKernel(NumpyKernel):
    """Shared body of ArgMax and ArgMin; subclasses set ``arg`` (np.argmax or np.argmin)."""

    arg: ClassVar[Callable[..., Any]]

    def compute(self, x: np.ndarray) -> np.ndarray:
        axis = int(self.attr("axis", 0))
        axis = axis + x.ndim if axis < 0 else axis
        if self.attr("select_last_index", 0):
            flipped = type(self).arg(np.flip(x, axis=axis), axis=axis, keepdims=True)
            index = x.shape[axis] - 1 - flipped
        else:
            index = type(self).arg(x, axis=axis, keepdims=True)
        if not self.attr("keepdims", 1):
            index = np.squeeze(index, axis=axis)
        return np.asarray(index, dtype=np.int64)
