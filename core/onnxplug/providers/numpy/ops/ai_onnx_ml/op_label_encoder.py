import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, lookup
from onnxplug.providers.numpy.registry import op


@op("LabelEncoder", 1, domain=ML)
class LabelEncoderV1(NumpyKernel):
    """string -> its index in ``classes_strings``, or int64 index -> that string."""

    def compute(self, x):
        classes = list(self.attr("classes_strings") or [])
        if x.dtype == object:
            return lookup(x, classes, np.arange(len(classes), dtype=np.int64), self.attr("default_int64", -1))
        return lookup(x.astype(np.int64), list(range(len(classes))), np.array(classes, dtype=object),
                      self.attr("default_string", "_Unused"))


@op("LabelEncoder", 2, domain=ML)
class LabelEncoder(NumpyKernel):
    """Map each value through keys_* -> values_* (or keys_tensor -> values_tensor); unknown -> default."""

    def __init__(self, node, context):
        super().__init__(node, context)
        keys = next((self.attr(n) for n in ("keys_strings", "keys_int64s", "keys_floats") if self.attr(n)), None)
        if keys is None:
            keys = self.attr("keys_tensor", np.zeros(0)).reshape(-1).tolist()
        if self.attr("values_strings"):
            values, default = np.array(self.attr("values_strings"), dtype=object), self.attr("default_string", "_Unused")
        elif self.attr("values_int64s"):
            values, default = np.array(self.attr("values_int64s"), dtype=np.int64), self.attr("default_int64", -1)
        elif self.attr("values_floats"):
            values, default = np.array(self.attr("values_floats"), dtype=np.float32), self.attr("default_float", -0.0)
        else:
            values = np.asarray(self.attr("values_tensor")).reshape(-1)
            default = self.attr("default_tensor")
            if default is None:
                default = "_Unused" if values.dtype == object else (-1 if values.dtype.kind in "iu" else -0.0)
            else:
                default = np.asarray(default).reshape(-1)[0]
        if len(keys) != len(values):
            raise ValueError(f"LabelEncoder: {len(keys)} keys but {len(values)} values")
        self._keys, self._values, self._default = list(keys), values, default

    def compute(self, x):
        return lookup(x, self._keys, self._values, self._default)
