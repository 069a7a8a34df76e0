"""MatMul (batched, broadcasting), Gemm and FusedGemm (Gemm + activation): BLAS via numpy.matmul."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import GraphView, KernelContext, Node

from onnxplug_numba.fusion.ops import FUSED_DOMAIN
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, all_present_same, matmul, openblas_serial
from onnxplug_numba.ops.op_conv import activation_in_place, activation_supported, fused_activation
from onnxplug_numba.provider import NumbaProvider


@NumbaProvider.kernel("MatMul")
class MatMul(NumbaKernel):
    """numpy.matmul semantics are ONNX MatMul's (1-D promotion, batch broadcasting)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.ndim == 2 and b.ndim == 2 and openblas_serial(a.shape[0], a.size * b.shape[1], b.shape[1]):
            return a.dot(b)  # matmul's first case, without its call: most of a tiny product's cost
        return matmul(a, b, self.threads)


@NumbaProvider.kernel("Gemm")
class Gemm(NumbaKernel):
    """alpha * A' B' + beta * C, with C broadcast (unidirectionally) to the product."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.trans_a = bool(self.attr("transA", 0))
        self.trans_b = bool(self.attr("transB", 0))
        self.alpha = float(self.attr("alpha", 1.0))
        self.beta = float(self.attr("beta", 1.0))

    def product(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        if self.trans_a:
            a = a.T  # a view: BLAS reads it transposed, without a copy
        if self.trans_b:
            b = b.T
        if a.ndim == 2 and b.ndim == 2 and openblas_serial(a.shape[0], a.size * b.shape[1], b.shape[1]):
            y = a.dot(b)  # a tiny product (a Loop body's cell): no call of matmul and its checks
        else:
            y = matmul(a, b, self.threads)
        alpha = self.alpha
        if alpha != 1.0:
            y *= y.dtype.type(alpha)
        if c is not None:
            beta = self.beta
            if beta == 1.0:
                np.add(y, c, out=y)  # (the ufunc dispatches with less overhead than +=)
            elif beta != 0.0:
                y += c * c.dtype.type(beta)
        return y

    # the executor calls compute: the product itself, without a frame around it
    compute = product


@NumbaProvider.kernel("FusedGemm", domain=FUSED_DOMAIN)
@NumbaProvider.kernel("FusedGemm", domain="com.microsoft")
class FusedGemm(Gemm):
    """Gemm followed by ``activation`` (attributes as onnxruntime's com.microsoft FusedGemm)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES) and activation_supported(node)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.act = fused_activation(node)  # read once, not per call

    def compute(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        return activation_in_place(self.product(a, b, c), self.act)  # type: ignore[arg-type]
