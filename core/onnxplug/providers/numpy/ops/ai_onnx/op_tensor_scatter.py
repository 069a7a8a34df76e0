import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("TensorScatter")
class TensorScatter(NumpyKernel):
    """Write ``update`` into a copy of the cache along ``axis`` from each batch row's write index
    (``circular`` wraps around the cache length): the KV-cache update of attention blocks."""

    def compute(self, cache, update, write_indices=None):
        axis = self.attr("axis", -2) % cache.ndim
        if axis == 0:
            raise ValueError("TensorScatter: axis 0 is the batch axis")
        if update.shape[:axis] != cache.shape[:axis] or update.shape[axis + 1:] != cache.shape[axis + 1:] \
                or update.shape[axis] > cache.shape[axis]:
            raise ValueError(f"TensorScatter: update shape {list(update.shape)} does not fit cache "
                             f"shape {list(cache.shape)} along axis {axis}")
        batch, length, steps = cache.shape[0], cache.shape[axis], update.shape[axis]
        start = np.zeros(batch, np.int64) if write_indices is None else write_indices.astype(np.int64)
        pos = start[:, None] + np.arange(steps)
        if self.attr("mode", "linear") == "circular":
            pos %= length
        elif steps and (pos.min() < 0 or pos.max() >= length):
            raise IndexError(f"TensorScatter: write positions {pos.min()}..{pos.max()} outside cache length {length}")
        out = cache.copy()
        moved = np.moveaxis(out, axis, 1)  # a view: batch, then the scatter axis
        moved[np.arange(batch)[:, None], pos] = np.moveaxis(update, axis, 1)
        return out
