"""com.microsoft FastGelu: the tanh approximation of Gelu, 0.5 y (1 + tanh(0.7978845608 (y + 0.044715 y^3))),
of y = X (+ bias over the last axis)."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_gelu import gelu_in_blocks
from onnxplug.providers.numpy.registry import op


@op("FastGelu", domain=DOMAIN)
class FastGelu(NumpyKernel):
    def compute(self, x, bias=None):
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != (x.shape[-1] if x.ndim else 1)):
            raise ValueError(f"{self.node.describe()}: bias must be a vector over the input's last axis, "
                             f"got shape {list(bias.shape)} for input {list(x.shape)}")
        return gelu_in_blocks(x, "tanh", bias)
