"""Scale (onnxruntime, default domain): y = scale * x."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft._legacy import elementwise
from onnxplug.providers.numpy.registry import op


@op("Scale")
class Scale(NumpyKernel):
    def compute(self, x):
        scale = float(self.attr("scale", 1.0))
        return elementwise(x, lambda v: v * v.dtype.type(scale))
