"""com.microsoft QLinearMul: C = quantize(dequantize(A) * dequantize(B)), per-tensor parameters."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._qlinear_binary import QLinearBinary
from onnxplug.providers.numpy.registry import op


@op("QLinearMul", domain=DOMAIN)
class QLinearMul(QLinearBinary):
    def op(self, a, b):
        return a * b
