"""com.microsoft BiasAdd: X + bias + skip, X and skip [N, S, C], bias [C] (onnxruntime runs it on
CUDA only; the transformers optimizer writes it for diffusion UNets)."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("BiasAdd", domain=DOMAIN)
class BiasAdd(NumpyKernel):
    def compute(self, x, bias, skip):
        if x.ndim != 3 or skip.shape != x.shape or bias.shape != (x.shape[2],):
            raise ValueError(f"{self.node.describe()}: needs X and skip [N, S, C] and bias [C], got "
                             f"{list(x.shape)}, {list(skip.shape)}, {list(bias.shape)}")
        total = x + bias
        total += skip
        return total
