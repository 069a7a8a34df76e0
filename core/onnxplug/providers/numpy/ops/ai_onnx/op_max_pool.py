import numpy as np

from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.ops._pool_util import PoolKernel, lowest, max_pool
from onnxplug.providers.numpy.registry import op


@op("MaxPool")
class MaxPool(PoolKernel):
    """Max over windows; the optional Indices output holds flat input indices (storage_order 0/1)."""

    def compute(self, x):
        g = self.geometry(x)
        xw = widen(x)
        if len(self.node.outputs) < 2 or not self.node.outputs[1]:
            return np.asarray(max_pool(xw, g), dtype=x.dtype)
        return self._with_indices(xw, g, x.dtype)

    def _with_indices(self, x, g, dtype):
        n, c = x.shape[:2]
        sp = x.shape[2:]
        plane = np.arange(int(np.prod(sp)), dtype=np.int64).reshape(sp)
        if int(self.attr("storage_order", 0)) == 1:  # column-major within each plane
            plane = np.arange(int(np.prod(sp)), dtype=np.int64).reshape(sp[::-1]).T
        xp = g.padded(x, lowest(x.dtype))
        ip = g.padded(plane, -1)
        best = None
        best_idx = None
        for idx, v in g.views(xp):
            iv = ip[(Ellipsis,) + tuple(slice(i * d, i * d + (o - 1) * s + 1, s)
                                        for i, d, o, s in zip(idx, g.dilations, g.out, g.strides))]
            if best is None:
                best = v.copy()
                best_idx = np.broadcast_to(iv, v.shape).copy()
            else:
                better = v > best
                np.maximum(best, v, out=best)
                np.copyto(best_idx, iv, where=better)
        offset = (np.arange(n * c, dtype=np.int64) * int(np.prod(sp))).reshape((n, c) + (1,) * len(sp))
        return np.asarray(best, dtype=dtype), best_idx + offset
