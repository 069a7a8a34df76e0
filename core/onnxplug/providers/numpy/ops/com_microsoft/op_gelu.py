"""com.microsoft Gelu: 0.5 x (1 + erf(x / sqrt 2)), no attributes."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_gelu import gelu_in_blocks
from onnxplug.providers.numpy.registry import op


@op("Gelu", domain=DOMAIN)
class Gelu(NumpyKernel):
    def compute(self, x):
        return gelu_in_blocks(x, "none")
