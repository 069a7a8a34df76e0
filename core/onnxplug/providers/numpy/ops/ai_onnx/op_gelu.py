from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_gelu import gelu_in_blocks
from onnxplug.providers.numpy.registry import op


@op("Gelu")
class Gelu(NumpyKernel):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation when approximate='tanh'."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self.approximate = self.attr("approximate", "none")

    def compute(self, x):
        return gelu_in_blocks(x, self.approximate)
