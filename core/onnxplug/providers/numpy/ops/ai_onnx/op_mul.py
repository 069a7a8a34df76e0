from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("Mul")
class Mul(QuietBinaryKernel):
    def op(self, a, b):
        return a * b
