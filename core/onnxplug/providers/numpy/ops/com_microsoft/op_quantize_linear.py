"""com.microsoft QuantizeLinear and DequantizeLinear: ai.onnx's (per tensor or per ``axis``) under
onnxruntime's contrib domain, which the quantization tool writes for 16-bit and 4-bit types."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_dequantize_linear import DequantizeLinear as _Dequantize
from onnxplug.providers.numpy.ops.ai_onnx.op_quantize_linear import QuantizeLinear as _Quantize
from onnxplug.providers.numpy.registry import op


@op("QuantizeLinear", domain=DOMAIN)
class QuantizeLinear(_Quantize):
    pass


@op("DequantizeLinear", domain=DOMAIN)
class DequantizeLinear(_Dequantize):
    pass
