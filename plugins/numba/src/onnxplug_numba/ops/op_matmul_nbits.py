"""com.microsoft MatMulNBits: Y = A @ dequant(B)^T (+ bias), B block-quantized along K, as the
numpy provider computes it: B dequantized to float32 by its kernel's rule (once at construction
when B, scales, zero points and g_idx are constant initializers, else on each call), then one
float32 product (ops/_base.matmul, over the session's threads). Declined: A other than float32."""

from __future__ import annotations

import numpy as np
from onnxplug.providers.numpy.ops.com_microsoft.op_mat_mul_n_bits import (
    MatMulNBits as _NumpyMatMulNBits,
)
from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_numba.ops._base import NumbaKernel, matmul
from onnxplug_numba.provider import NumbaProvider

_F32 = np.dtype(np.float32)


@NumbaProvider.kernel("MatMulNBits", domain="com.microsoft")
class MatMulNBits(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        for i in (0, 2, 5):
            if i < len(node.inputs) and node.inputs[i] and view.dtype_of(node.inputs[i]) != _F32:
                return Decline("dtype", f"input {node.inputs[i]!r} is {view.dtype_of(node.inputs[i])}, not float32")
        if int(node.attr("bits", 4)) not in (2, 4, 8):
            return Decline("attribute", f"bits={node.attr('bits')} is not computed")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.k, self.n = int(self.attr("K")), int(self.attr("N"))
        self.bits, self.block = int(self.attr("bits", 4)), int(self.attr("block_size"))
        if self.block < 16 or self.block & (self.block - 1):
            raise ValueError(f"{node.describe()}: block_size must be a power of 2 and at least 16, got {self.block}")
        self.blocks = -(-self.k // self.block)
        weight_inputs = (list(node.inputs[1:5]) + ["", "", ""])[:4]  # B, scales, zero_points, g_idx
        self.prepacked = None
        if weight_inputs[0] and all(not name or name in context.constants for name in weight_inputs):
            self.prepacked = self._dequantize(*(context.constants[name] if name else None for name in weight_inputs))

    def _dequantize(self, b, scales, zero_points, g_idx) -> np.ndarray:  # type: ignore[no-untyped-def]
        """The float32 (K, N) weights, by the numpy provider's kernel's rule."""
        return _NumpyMatMulNBits._dequantize(self, b, scales, zero_points, g_idx)  # type: ignore[arg-type]

    def compute(self, a, b, scales, zero_points=None, g_idx=None, bias=None):  # type: ignore[no-untyped-def]
        if a.shape[-1] != self.k:
            raise ValueError(f"{self.node.describe()}: A's last axis is {a.shape[-1]}, K is {self.k}")
        weights = self.prepacked if self.prepacked is not None else self._dequantize(b, scales, zero_points, g_idx)
        return matmul(a, weights, self.threads, None if bias is None else bias.astype(np.float32, copy=False))
