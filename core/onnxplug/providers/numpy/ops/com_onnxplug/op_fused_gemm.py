"""com.onnxplug FusedGemm and FusedMatMul: Gemm / MatMul followed by an activation (docs/fused-ops.md)."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.ai_onnx.op_gemm import Gemm
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_activation import (activation_of, activation_supported, apply_activation,
                                                                  in_place_activation)
from onnxplug.providers.numpy.registry import op


@op("FusedGemm", domain="com.onnxplug")
class FusedGemm(Gemm):
    """alpha * A' @ B' + beta * C (ai.onnx Gemm attributes, parsed once as Gemm does), then the
    activation in place."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.activation = activation_of(self)
        self._activate = in_place_activation(*self.activation)

    def compute(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        y = Gemm.compute(self, a, b, c)  # not super(): less per call in a Loop body
        return self._activate(y) if y.flags.writeable else apply_activation(y, *self.activation)

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
