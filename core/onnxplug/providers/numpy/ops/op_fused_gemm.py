"""com.onnxplug FusedGemm and FusedMatMul: Gemm / MatMul followed by an activation (docs/fused-ops.md)."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.op_fused_activation import activation_supported, apply_activation
from onnxplug.providers.numpy.registry import op


@op("FusedGemm", domain="com.onnxplug")
class FusedGemm(NumpyKernel):
    """alpha * A' @ B' + beta * C (ai.onnx Gemm attributes), then the activation in place."""

    def compute(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        alpha = float(self.attr("alpha", 1.0))
        beta = float(self.attr("beta", 1.0))
        y = matmul(a.T if self.attr("transA", 0) else a, b.T if self.attr("transB", 0) else b)
        if alpha != 1.0:
            y *= y.dtype.type(alpha)
        if c is not None and beta != 0.0:
            y += c if beta == 1.0 else c * c.dtype.type(beta)
        return apply_activation(np.asarray(y, dtype=a.dtype), self.attr("activation", ""),
                                self.attr("activation_params", []) or [])

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return activation_supported(node)


@op("FusedMatMul", domain="com.onnxplug")
class FusedMatMul(NumpyKernel):
    """A @ B (ai.onnx MatMul broadcasting), then the activation in place."""

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return apply_activation(np.asarray(matmul(a, b), dtype=a.dtype), self.attr("activation", ""),
                                self.attr("activation_params", []) or [])

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return activation_supported(node)
