import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, float_rows
from onnxplug.providers.numpy.registry import op


@op("Normalizer", domain=ML)
class Normalizer(NumpyKernel):
    """Each row divided by its max (MAX), sum of |x| (L1) or L2 norm; rows whose divisor is 0 pass through.

    As onnxruntime, MAX divides by the largest value (not the largest magnitude).
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._norm = self.attr("norm", "MAX")

    def compute(self, x):
        rows = float_rows(x)
        norm = self._norm
        if norm == "MAX":
            div = rows.max(axis=1, keepdims=True)
        elif norm == "L1":
            div = np.abs(rows).sum(axis=1, keepdims=True)
        elif norm == "L2":
            div = np.sqrt(np.square(rows).sum(axis=1, keepdims=True))
        else:
            raise ValueError(f"Normalizer: unknown norm {norm!r} (MAX, L1 or L2)")
        nonzero = div != 0
        if nonzero.all():
            return (rows / div).astype(np.float32, copy=False).reshape(x.shape)
        out = np.where(nonzero, rows / np.where(nonzero, div, 1), rows)
        return out.astype(np.float32, copy=False).reshape(x.shape)
