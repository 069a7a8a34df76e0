"""com.microsoft BiasSplitGelu: with Y = X + bias split in halves along the last axis, left *
Gelu(right) (erf Gelu); X [N, HW, D], bias [D], output [N, HW, D / 2] (onnxruntime runs it on CUDA
only; the transformers optimizer writes it for diffusion UNets)."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._special_math import gelu
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("BiasSplitGelu", domain=DOMAIN)
class BiasSplitGelu(NumpyKernel):
    def compute(self, x, bias):
        if x.ndim != 3 or bias.shape != (x.shape[2],) or x.shape[2] % 2:
            raise ValueError(f"{self.node.describe()}: needs X [N, HW, D] with D even and bias [D], got "
                             f"{list(x.shape)} and {list(bias.shape)}")
        half = x.shape[2] // 2
        total = x + bias
        return (total[..., :half] * gelu(total[..., half:], "none")).astype(x.dtype, copy=False)
