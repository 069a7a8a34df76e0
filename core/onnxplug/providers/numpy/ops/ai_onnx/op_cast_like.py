from onnxplug.ir.types import elem_type_of
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._cast_util import cast_array
from onnxplug.providers.numpy.registry import op


@op("CastLike")
class CastLike(NumpyKernel):
    def compute(self, x, like):
        return cast_array(x, elem_type_of(like.dtype), bool(self.attr("saturate", 1)), self.attr("round_mode", "up"))
