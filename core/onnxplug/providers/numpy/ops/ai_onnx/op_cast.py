from onnx import TensorProto

from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._cast_util import _FLOAT8E8M0, _SATURATING_FLOAT8, cast_array
from onnxplug.providers.numpy.registry import op


@op("Cast")
class Cast(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        to = self.attr("to")
        # opset 1 names the type with a string, e.g. "FLOAT"
        self.to = TensorProto.DataType.Value(to.upper()) if isinstance(to, str) else int(to)
        self.saturate = bool(self.attr("saturate", 1))
        self.round_mode = self.attr("round_mode", "up")
        #: the target dtype when cast_array's answer is a plain ``astype`` (not strings, float8e8m0 or
        #: saturating float8), for the inputs that are not strings; else None
        self.plain = None
        if (self.to not in (TensorProto.STRING, _FLOAT8E8M0)
                and not (self.to in _SATURATING_FLOAT8 and self.saturate)):
            try:
                self.plain = numpy_dtype(self.to)
            except (KeyError, TypeError, ValueError):  # unknown: cast_array raises at run time
                self.plain = None

    def compute(self, x):
        target = self.plain
        if target is not None and x.dtype.kind != "O":
            # the executor runs kernels with numpy's floating-point warnings off (out-of-range
            # float -> int is undefined in ONNX)
            return x.astype(target)
        return cast_array(x, self.to, self.saturate, self.round_mode)
