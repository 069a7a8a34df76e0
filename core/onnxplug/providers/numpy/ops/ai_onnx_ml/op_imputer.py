import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op


@op("Imputer", domain=ML)
class Imputer(NumpyKernel):
    """Replace ``replaced_value_*`` (NaN matches NaN) by the imputed value of its feature (last axis)."""

    def compute(self, x):
        floats = self.attr("imputed_value_floats")
        if floats:
            values, replaced = np.asarray(floats), self.attr("replaced_value_float", 0.0)
        else:
            values, replaced = np.asarray(self.attr("imputed_value_int64s") or []), self.attr("replaced_value_int64", 0)
        if values.size == 0:
            raise ValueError("Imputer: imputed_value_floats or imputed_value_int64s must be set")
        if values.size not in (1, x.shape[-1]):
            raise ValueError(f"Imputer: {values.size} imputed values for {x.shape[-1]} features")
        hit = np.isnan(x) if (isinstance(replaced, float) and np.isnan(replaced) and x.dtype.kind == "f") \
            else x == replaced
        return np.where(hit, values.astype(x.dtype), x)
