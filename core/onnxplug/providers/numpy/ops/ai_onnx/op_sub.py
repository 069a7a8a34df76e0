from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op


@op("Sub")
class Sub(QuietBinaryKernel):
    def op(self, a, b):
        return a - b
