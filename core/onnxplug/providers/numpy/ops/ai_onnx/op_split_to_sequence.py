import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SplitToSequence")
class SplitToSequence(NumpyKernel):
    """Split along ``axis`` into pieces of size 1 (optionally squeezed), of a given size, or given sizes."""

    def compute(self, x, split=None):
        axis = self.attr("axis", 0) % x.ndim
        n = x.shape[axis]
        if split is None:
            parts = np.split(x, n, axis=axis) if n else []
            return [p.squeeze(axis) for p in parts] if not self.attr("keepdims", 1) else parts
        sizes = np.asarray(split).astype(np.int64)
        if sizes.ndim == 0:  # chunks of one size; the last may be smaller
            step = int(sizes)
            if step <= 0:
                raise ValueError(f"split size must be positive, got {step}")
            cuts = list(range(step, n, step))
        else:
            if sizes.sum() != n or (sizes < 0).any():
                raise ValueError(f"split sizes {sizes.tolist()} do not add up to dimension {n}")
            cuts = np.cumsum(sizes)[:-1].tolist()
        return np.split(x, cuts, axis=axis)
