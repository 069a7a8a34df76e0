import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("MaxUnpool")
class MaxUnpool(NumpyKernel):
    """Scatter X to the flat positions I of a zero tensor of the pool's input shape; a given
    output_shape receives that tensor in its leading corner (as the ONNX tests expect)."""

    def compute(self, x, indices, output_shape=None):
        kernel = [int(k) for k in self.attr("kernel_shape")]
        nd = len(kernel)
        strides = [int(s) for s in (self.attr("strides", None) or [1] * nd)]
        pads = [int(p) for p in (self.attr("pads", None) or [0] * 2 * nd)]
        shape = x.shape[:2] + tuple((i - 1) * s + k - pads[d] - pads[nd + d]
                                    for d, (i, s, k) in enumerate(zip(x.shape[2:], strides, kernel)))
        y = np.zeros(shape, dtype=x.dtype)
        y.reshape(-1)[indices.reshape(-1)] = x.reshape(-1)
        if output_shape is None:
            return y
        out = np.zeros(tuple(int(v) for v in output_shape), dtype=x.dtype)
        common = tuple(slice(0, min(a, b)) for a, b in zip(shape, out.shape))
        out[common] = y[common]
        return out
