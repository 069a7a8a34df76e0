"""com.microsoft NhwcMaxPool: MaxPool (its attributes) of a channels-last N...C input, N...C output,
as onnxruntime's NHWC rewrite of quantized (uint8 / int8) models writes it."""

import numpy as np

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_max_pool import MaxPool
from onnxplug.providers.numpy.registry import op


@op("NhwcMaxPool", domain=DOMAIN)
class NhwcMaxPool(MaxPool):
    def compute(self, x):
        y = super().compute(np.ascontiguousarray(np.moveaxis(x, -1, 1)))
        return np.ascontiguousarray(np.moveaxis(y, 1, -1))
