"""com.microsoft BiasGelu: the erf Gelu of A + B, B a vector over A's last axis."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_gelu import gelu_in_blocks
from onnxplug.providers.numpy.registry import op


@op("BiasGelu", domain=DOMAIN)
class BiasGelu(NumpyKernel):
    def compute(self, a, b):
        if b.ndim != 1 or b.shape[0] != (a.shape[-1] if a.ndim else 1):
            raise ValueError(f"{self.node.describe()}: bias must be a vector over the input's last axis, "
                             f"got shape {list(b.shape)} for input {list(a.shape)}")
        return gelu_in_blocks(a, "none", b)
