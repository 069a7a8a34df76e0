import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, lookup
from onnxplug.providers.numpy.registry import op


@op("CategoryMapper", domain=ML)
class CategoryMapper(NumpyKernel):
    """string -> int64 via (cats_strings[i] -> cats_int64s[i]), or int64 -> string the other way."""

    def compute(self, x):
        strings = list(self.attr("cats_strings") or [])
        ints = np.asarray(self.attr("cats_int64s") or [], dtype=np.int64)
        if x.dtype == object:
            return lookup(x, strings, ints, self.attr("default_int64", -1))
        return lookup(x.astype(np.int64), ints.tolist(), np.array(strings, dtype=object),
                      self.attr("default_string", "_Unused"))
