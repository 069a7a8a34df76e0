"""com.microsoft Range: ai.onnx Range with delta optional (default 1)."""

import numpy as np

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_range import Range as _OnnxRange
from onnxplug.providers.numpy.registry import op


@op("Range", domain=DOMAIN)
class Range(_OnnxRange):
    def compute(self, start, limit, delta=None):
        return super().compute(start, limit, np.ones((), start.dtype) if delta is None else delta)
