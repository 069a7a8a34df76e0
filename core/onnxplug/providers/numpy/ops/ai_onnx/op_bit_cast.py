from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("BitCast")
class BitCast(NumpyKernel):
    """Reinterpret the bits as another type of the same width (no conversion)."""

    def compute(self, x):
        target = numpy_dtype(self.attr("to"))
        if x.dtype == object or target == object or x.dtype.itemsize != target.itemsize:
            raise TypeError(f"BitCast: cannot reinterpret {x.dtype} as {target} (same bit width, no strings)")
        return x.view(target)
