from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("OptionalGetElement")
class OptionalGetElement(NumpyKernel):
    def compute(self, value):
        if value is None:
            raise ValueError("OptionalGetElement: the optional input is empty")
        return value
