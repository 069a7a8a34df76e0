"""com.microsoft GatherND: ai.onnx GatherND without batch_dims, in onnxruntime's contrib domain."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_gather_nd import GatherND as _OnnxGatherND
from onnxplug.providers.numpy.registry import op


@op("GatherND", domain=DOMAIN)
class GatherND(_OnnxGatherND):
    pass
