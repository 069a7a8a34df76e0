"""com.onnxplug FusedGemm and FusedMatMul: Gemm / MatMul followed by an activation (docs/fused-ops.md)."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.op_fused_activation import activation_of, activation_supported, apply_activation
from onnxplug.providers.numpy.registry import op


@op("FusedGemm", domain="com.onnxplug")
class FusedGemm(NumpyKernel):
    """alpha * A' @ B' + beta * C (ai.onnx Gemm attributes), then the activation in place."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        # parsed once: a recurrent cell's FusedGemm in a Loop body runs thousands of times (the six
        # attribute reads per call were 12% of the loop model's time)
        self.alpha = float(self.attr("alpha", 1.0))
        self.beta = float(self.attr("beta", 1.0))
        self.trans_a = bool(self.attr("transA", 0))
        self.trans_b = bool(self.attr("transB", 0))
        self.activation = activation_of(self)

    def compute(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        y = matmul(a.T if self.trans_a else a, b.T if self.trans_b else b)
        if self.alpha != 1.0:
            y *= y.dtype.type(self.alpha)
        if c is not None and self.beta != 0.0:
            y += c if self.beta == 1.0 else c * c.dtype.type(self.beta)
        return apply_activation(np.asarray(y, dtype=a.dtype), *self.activation)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return activation_supported(node)


@op("FusedMatMul", domain="com.onnxplug")
class FusedMatMul(NumpyKernel):
    """A @ B (ai.onnx MatMul broadcasting), then the activation in place."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.activation = activation_of(self)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return apply_activation(np.asarray(matmul(a, b), dtype=a.dtype), *self.activation)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return activation_supported(node)
