import numpy as np
from onnx import numpy_helper

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op

# The plain attribute forms (opset 12+) and the numpy dtype each one produces.
_PLAIN_FORMS = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                "value_ints": np.int64, "value_string": object, "value_strings": object}


def _dense(sparse) -> np.ndarray:
    """A SparseTensorProto as a dense array (indices are flat or one row of coordinates per value)."""
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


@op("Constant")
class Constant(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.value = self._read()
        self.value.flags.writeable = False  # shared by every run: nobody may write into it

    def _read(self) -> np.ndarray:
        value = self.attr("value")
        if value is not None:
            return np.asarray(value)
        sparse = self.attr("sparse_value")
        if sparse is not None:
            return _dense(sparse)
        for name, dtype in _PLAIN_FORMS.items():
            plain = self.attr(name)
            if plain is not None:
                if dtype is object:
                    plain = np.array(plain, dtype=object)
                return np.asarray(plain, dtype=dtype)
        raise ValueError(f"{self.node.describe()}: Constant has no value attribute")

    def compute(self):
        return self.value.copy()
