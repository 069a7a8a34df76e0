"""com.microsoft GridSample: ai.onnx GridSample-16 (mode bilinear / nearest / bicubic, padding_mode,
align_corners) in onnxruntime's contrib domain."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_grid_sample import GridSample as _OnnxGridSample
from onnxplug.providers.numpy.registry import op


@op("GridSample", domain=DOMAIN)
class GridSample(_OnnxGridSample):
    pass
