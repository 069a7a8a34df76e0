import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("Pow")
class Pow(QuietBinaryKernel):
    """Base and exponent may differ in type; the result has the base's type."""

    def op(self, a, b):
        if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
            return np.power(a, b if b.dtype is a.dtype else b.astype(a.dtype))  # no copy of a same-typed b
        if b.dtype.kind in "iu":
            negative = b < 0
            r = np.power(a, np.where(negative, 0, b).astype(a.dtype))
            r = np.where(negative, np.power(a, np.abs(b).astype(a.dtype)), r)
            # x**-n is 0 for |x| > 1 once truncated to an integer; +-1 keep their parity
            return np.where(negative & (np.abs(a) != 1), 0, r)
        return np.power(a.astype(np.float64), b.astype(np.float64))  # integer base, float exponent
