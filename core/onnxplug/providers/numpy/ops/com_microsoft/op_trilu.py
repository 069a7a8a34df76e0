"""com.microsoft Trilu: ai.onnx Trilu (``upper``, optional k input) in onnxruntime's contrib domain."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_trilu import Trilu as _OnnxTrilu
from onnxplug.providers.numpy.registry import op


@op("Trilu", domain=DOMAIN)
class Trilu(_OnnxTrilu):
    pass
