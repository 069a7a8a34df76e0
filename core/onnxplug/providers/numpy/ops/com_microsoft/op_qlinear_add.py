"""com.microsoft QLinearAdd: C = quantize(dequantize(A) + dequantize(B)), per-tensor parameters."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear_binary import QLinearBinary
from onnxplug.providers.numpy.registry import op


@op("QLinearAdd", domain=DOMAIN)
class QLinearAdd(QLinearBinary):
    def op(self, a, b):
        return a + b
