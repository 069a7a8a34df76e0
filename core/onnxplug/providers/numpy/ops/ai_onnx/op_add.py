from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("Add")
class Add(QuietBinaryKernel):
    def op(self, a, b):
        return a + b
