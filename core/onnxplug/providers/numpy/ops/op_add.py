from onnxplug.providers.numpy.ops._base import BinaryKernel
from onnxplug.providers.numpy.registry import op


@op("Add")
class Add(BinaryKernel):
    def op(self, a, b):
        return a + b
