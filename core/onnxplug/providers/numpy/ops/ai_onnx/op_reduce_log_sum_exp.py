import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import QuietReduceKernel, lowest
from onnxplug.providers.numpy.registry import op


@op("ReduceLogSumExp")
class ReduceLogSumExp(QuietReduceKernel):
    def op(self, x, axes, keepdims):
        # Shift by the max so exp cannot overflow; an infinite or empty max shifts by 0.
        shift = np.max(x, axis=axes, keepdims=True, initial=lowest(x.dtype))
        shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype)
        total = np.sum(np.exp(x - shift), axis=axes, keepdims=keepdims, dtype=x.dtype)
        return np.log(total) + (shift if keepdims else np.squeeze(shift, axis=axes))
