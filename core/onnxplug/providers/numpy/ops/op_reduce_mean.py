import numpy as np

from onnxplug.providers.numpy.ops._nn_util import trailing_sums
from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel
from onnxplug.providers.numpy.registry import op


@op("ReduceMean")
class ReduceMean(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        if x.size and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
            # np.mean's own steps (a sum, then one division) without its ~5 us of Python
            total = trailing_sums(x, axes, keepdims)
            if total is None:
                total = np.add.reduce(x, axis=axes, keepdims=keepdims)
            return np.true_divide(total, x.size // max(np.size(total), 1))
        return np.mean(x, axis=axes, keepdims=keepdims)
