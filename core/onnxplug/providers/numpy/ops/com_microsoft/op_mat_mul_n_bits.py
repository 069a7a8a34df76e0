"""com.microsoft MatMulNBits: Y = A @ dequant(B)^T (+ bias), B block-quantized along K.

B is uint8 [N, k_blocks, block_size * bits / 8], codes packed low bits first along K; scales
[N * k_blocks] (or [N, k_blocks]); zero_points packed uint8 codes (ceil(k_blocks * bits / 8) bytes
per row, default 2^(bits-1)) or floats shaped as scales; g_idx [K] (deprecated; not with packed
zero points) maps each k to its block. A weight is (code - zero_point) * scale. When the weight
inputs are initializers the float32 matrix is dequantized once, at session creation, and each run
is one BLAS product; accuracy_level (onnxruntime's internal int8 quantization of A) is not reproduced: A stays float."""

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op

_BITS = (2, 4, 8)


def unpack_codes(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first ``count`` codes of each row of ``packed`` (uint8, last axis), low bits first."""
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    codes = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return codes.reshape(*packed.shape[:-1], -1)[..., :count]


@op("MatMulNBits", domain=DOMAIN)
class MatMulNBits(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.k, self.n = int(self.attr("K")), int(self.attr("N"))
        self.bits, self.block = int(self.attr("bits", 4)), int(self.attr("block_size"))
        if self.bits not in _BITS:
            raise NotImplementedOpError(f"{node.describe()}: attribute bits={self.bits} is not supported "
                                        f"(only {', '.join(map(str, _BITS))})")
        if self.block < 16 or self.block & (self.block - 1):
            raise ValueError(f"{node.describe()}: block_size must be a power of 2 and at least 16, got {self.block}")
        self.blocks = -(-self.k // self.block)
        weight_inputs = (list(node.inputs[1:5]) + ["", "", ""])[:4]  # B, scales, zero_points, g_idx
        self.prepacked = None
        if weight_inputs[0] and all(not name or name in context.constants for name in weight_inputs):
            self.prepacked = self._dequantize(*(context.constants[name] if name else None for name in weight_inputs))

    def compute(self, a, b, scales, zero_points=None, g_idx=None, bias=None):
        if a.shape[-1] != self.k:
            raise ValueError(f"{self.node.describe()}: A's last axis is {a.shape[-1]}, K is {self.k}")
        weights = self.prepacked if self.prepacked is not None else self._dequantize(b, scales, zero_points, g_idx)
        y = matmul(a.astype(np.float32, copy=False), weights)
        if bias is not None:
            y += bias.astype(np.float32, copy=False)
        return y.astype(a.dtype, copy=False)

    def _dequantize(self, b, scales, zero_points, g_idx) -> np.ndarray:
        n, k, blocks, bits = self.n, self.k, self.blocks, self.bits
        blob = self.block * bits // 8
        if b.dtype != np.uint8 or b.shape != (n, blocks, blob):
            raise ValueError(f"{self.node.describe()}: B must be uint8 [{n}, {blocks}, {blob}], "
                             f"got {b.dtype} {list(b.shape)}")
        if scales.size != n * blocks:
            raise ValueError(f"{self.node.describe()}: scales must hold {n} x {blocks} values, got {scales.size}")
        codes = unpack_codes(b.reshape(n, -1), bits, k).astype(np.float32)  # [N, K]
        scale = scales.reshape(n, blocks).astype(np.float32)
        if zero_points is None:
            zp = np.full((n, blocks), 1 << (bits - 1), np.float32)
        elif zero_points.dtype == np.uint8:
            per_row = -(-blocks * bits // 8)
            if zero_points.size != n * per_row:
                raise ValueError(f"{self.node.describe()}: packed zero_points must hold {n} x {per_row} "
                                 f"bytes, got {zero_points.size}")
            zp = unpack_codes(zero_points.reshape(n, per_row), bits, blocks).astype(np.float32)
        else:
            if zero_points.size != n * blocks:
                raise ValueError(f"{self.node.describe()}: zero_points must hold {n} x {blocks} values")
            zp = zero_points.reshape(n, blocks).astype(np.float32)
        if g_idx is not None and zero_points is not None and zero_points.dtype == np.uint8:
            raise NotImplementedOpError(f"{self.node.describe()}: g_idx with packed uint8 zero_points is not "
                                        "supported (onnxruntime reads them in an undocumented layout)")
        if g_idx is None:
            block_of = np.arange(k) // self.block
        else:
            block_of = g_idx.reshape(-1).astype(np.int64)
            if block_of.shape != (k,) or block_of.min() < 0 or block_of.max() >= blocks:
                raise ValueError(f"{self.node.describe()}: g_idx must be [{k}] block indices below {blocks}")
        weights = (codes - zp[:, block_of]) * scale[:, block_of]
        return np.ascontiguousarray(weights.T)
