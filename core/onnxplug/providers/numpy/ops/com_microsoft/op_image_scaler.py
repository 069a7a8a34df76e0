"""ImageScaler (onnxruntime, default domain): y = scale * x + bias[c] for NCHW images, one bias per
channel."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft._legacy import elementwise
from onnxplug.providers.numpy.registry import op


@op("ImageScaler")
class ImageScaler(NumpyKernel):
    def compute(self, x):
        if x.ndim != 4:
            raise ValueError(f"{self.node.describe()}: input must be NCHW, got shape {list(x.shape)}")
        bias = np.asarray(self.attr("bias", None) or [0.0] * x.shape[1], np.float64)
        if bias.size != x.shape[1]:
            raise ValueError(f"{self.node.describe()}: {bias.size} biases for {x.shape[1]} channels")
        scale = float(self.attr("scale", 1.0))
        return elementwise(x, lambda v: v * v.dtype.type(scale) + bias.astype(v.dtype).reshape(-1, 1, 1))
