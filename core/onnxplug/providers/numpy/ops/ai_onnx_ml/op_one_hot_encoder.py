import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, lookup
from onnxplug.providers.numpy.registry import op


@op("OneHotEncoder", domain=ML)
class OneHotEncoder(NumpyKernel):
    """x -> x.shape + [len(categories)] float32 one-hot rows; unknown values give zeros (or fail if zeros=0)."""

    def compute(self, x):
        strings = self.attr("cats_strings")
        cats = list(strings) if strings else list(self.attr("cats_int64s") or [])
        values = x if strings else x.astype(np.int64)
        pos = lookup(values, cats, np.arange(len(cats), dtype=np.int64), -1)
        if not self.attr("zeros", 1) and (pos < 0).any():
            bad = values.reshape(-1)[np.flatnonzero(pos.reshape(-1) < 0)[0]]
            raise ValueError(f"OneHotEncoder: value {bad!r} is not a category and zeros=0")
        return (pos[..., None] == np.arange(len(cats))).astype(np.float32)
