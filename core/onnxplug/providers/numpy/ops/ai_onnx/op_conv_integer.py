from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._quant_util import exact_int32
from onnxplug.providers.numpy.ops.ai_onnx.op_qlinear_conv import integer_conv, prepare_integer_conv
from onnxplug.providers.numpy.registry import op


@op("ConvInteger")
class ConvInteger(NumpyKernel):
    """Conv of (x - x_zero_point) and (w - w_zero_point) in exact integer arithmetic, int32 out."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        prepare_integer_conv(self, node, context, (1, 3))

    def compute(self, x, w, x_zero_point=None, w_zero_point=None):
        return exact_int32(integer_conv(self, x, x_zero_point, w, w_zero_point, None))
