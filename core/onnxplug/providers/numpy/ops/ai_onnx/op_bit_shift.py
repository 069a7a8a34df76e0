import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("BitShift")
class BitShift(QuietBinaryKernel):
    def op(self, a, b):
        # Shifts by a negative amount or by the bit width or more leave only the sign fill.
        bits = a.dtype.itemsize * 8
        invalid = (b < 0) | (b >= bits)
        amount = np.where(invalid, 0, b).astype(a.dtype)
        if self.attr("direction") == "LEFT":
            return np.where(invalid, 0, np.left_shift(a, amount))
        fill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else 0
        return np.where(invalid, fill, np.right_shift(a, amount))
