from onnxplug.providers.numpy.ops._nn_util import FloatUnaryKernel
from onnxplug.providers.numpy.ops.ai_onnx.op_sigmoid import sigmoid
from onnxplug.providers.numpy.registry import op


@op("Swish")
class Swish(FloatUnaryKernel):
    def op(self, x):
        return sigmoid(x * x.dtype.type(self.attr("alpha", 1.0))) * x
