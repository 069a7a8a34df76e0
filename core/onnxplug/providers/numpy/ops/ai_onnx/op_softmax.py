from onnxplug.providers.numpy.ops._nn_util import AxisSoftmaxKernel, softmax
from onnxplug.providers.numpy.registry import op


@op("Softmax")
class Softmax(AxisSoftmaxKernel):
    def op(self, x, axis):
        return softmax(x, axis)
