from onnx import TensorProto

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._cast_util import cast_array
from onnxplug.providers.numpy.registry import op


@op("Cast")
class Cast(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        to = self.attr("to")
        # opset 1 names the type with a string, e.g. "FLOAT"
        self.to = TensorProto.DataType.Value(to.upper()) if isinstance(to, str) else int(to)

    def compute(self, x):
        return cast_array(x, self.to, bool(self.attr("saturate", 1)), self.attr("round_mode", "up"))
