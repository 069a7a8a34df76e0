import numpy as np

from onnxplug.providers.numpy.ops._blocks import by_row_blocks
from onnxplug.providers.numpy.ops._elementwise_util import QuietUnaryKernel
from onnxplug.providers.numpy.ops._special_math import erf
from onnxplug.providers.numpy.registry import op


@op("Erf")
class Erf(QuietUnaryKernel):
    def op(self, x):
        if x.dtype.kind in "iub":  # integer erf truncates to 0 (or +-1 once erf rounds to 1.0)
            return erf(x.astype(np.float64))
        return by_row_blocks(erf, x)
