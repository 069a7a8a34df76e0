"""com.microsoft Pad: ai.onnx Pad-11's semantics (pads and value as inputs, ``mode``), pads of shape
[2 * rank] or [1, 2 * rank]."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_pad import Pad as _OnnxPad
from onnxplug.providers.numpy.registry import op


@op("Pad", domain=DOMAIN)
class Pad(_OnnxPad):
    def compute(self, x, pads, value=None):
        return self.pad(x, pads.reshape(-1), value)
