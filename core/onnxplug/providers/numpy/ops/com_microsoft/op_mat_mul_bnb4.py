"""com.microsoft MatMulBnb4 (bitsandbytes 4-bit weights, as transformers.js "bnb4" models carry):
Y = A @ W^T, W [N, K] flattened and packed two codes a byte (the even index in the high nibble),
W[i] = codebook[code] * absmax[i // block_size], quant_type 0 the FP4 codebook, 1 NF4. Constant
weights are dequantized once at session creation."""

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op

#: bitsandbytes' code books (quant_type 0: FP4, 1: NF4), as onnxruntime's kernels hold them.
_CODEBOOKS = {
    0: np.array([0.0, 5.208333333e-03, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25,
                 -0.0, -5.208333333e-03, -0.66666667, -1.0, -0.33333333, -0.5, -0.16666667, -0.25], np.float32),
    1: np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                 -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                 0.7229568362236023, 1.0], np.float32),
}


@op("MatMulBnb4", domain=DOMAIN)
class MatMulBnb4(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.k, self.n, self.block = int(self.attr("K")), int(self.attr("N")), int(self.attr("block_size"))
        quant_type = int(self.attr("quant_type"))
        if quant_type not in _CODEBOOKS:
            raise NotImplementedOpError(f"{node.describe()}: attribute quant_type={quant_type} is none of "
                                        "0 (FP4), 1 (NF4)")
        if self.attr("training_mode", 0) or not self.attr("transB", 1):
            raise NotImplementedOpError(f"{node.describe()}: training_mode=1 and transB=0 are not supported")
        self.codebook = _CODEBOOKS[quant_type]
        names = (list(node.inputs) + ["", ""])[1:3]
        self.prepacked = None
        if all(name in context.constants for name in names):
            self.prepacked = self._dequantize(*(context.constants[name] for name in names))

    def compute(self, a, b, absmax):
        if a.shape[-1] != self.k:
            raise ValueError(f"{self.node.describe()}: A's last axis is {a.shape[-1]}, K is {self.k}")
        weights = self.prepacked if self.prepacked is not None else self._dequantize(b, absmax)
        return matmul(a.astype(np.float32, copy=False), weights).astype(a.dtype, copy=False)

    def _dequantize(self, b: np.ndarray, absmax: np.ndarray) -> np.ndarray:
        """The [K, N] float32 weights."""
        count = self.n * self.k
        if b.dtype != np.uint8 or b.size != (count + 1) // 2 or absmax.size != -(-count // self.block):
            raise ValueError(f"{self.node.describe()}: B must hold {(count + 1) // 2} bytes and absmax "
                             f"{-(-count // self.block)} values, got {b.size} ({b.dtype}) and {absmax.size}")
        packed = b.reshape(-1)
        codes = np.stack((packed >> 4, packed & 0x0F), axis=-1).reshape(-1)[:count]
        scales = np.repeat(absmax.reshape(-1).astype(np.float32), self.block)[:count]
        return np.ascontiguousarray((self.codebook[codes] * scales).reshape(self.n, self.k).T)
