"""MatMul, Gemm and the project's FusedGemm / FusedMatMul: ``cupy.matmul``, i.e. cuBLAS GEMM
(strided-batched for batched products), then alpha, beta * C and the activation."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.codegen.expressions import FUSED_DOMAIN
from onnxplug_cupy.ops._base import FLOAT, CupyKernel, same_dtype
from onnxplug_cupy.provider import CupyProvider

#: Activations of the project's FusedConv / FusedGemm / FusedMatMul (docs/fused-ops.md).
ACTIVATIONS = frozenset({"", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid"})


def activation_of(node: Node) -> tuple[str, list[float]] | None:
    """The node's ``activation`` and ``activation_params``, or None if not one of ACTIVATIONS."""
    name = node.attr("activation", "") or ""
    name = name.decode() if isinstance(name, bytes) else name
    if name not in ACTIVATIONS:
        return None
    return name, [float(p) for p in (node.attr("activation_params", None) or [])]


def apply_activation(xp: Any, y: Any, name: str, params: Sequence[float]) -> Any:
    """The activation of a freshly computed ``y`` (updated in place where the op allows)."""
    if not name:
        return y
    t = y.dtype.type
    if name == "Relu":
        return xp.maximum(y, t(0), out=y)
    if name == "Clip":
        info = np.finfo(y.dtype)
        low = max(params[0], float(info.min)) if params else float(info.min)
        high = min(params[1], float(info.max)) if len(params) > 1 else float(info.max)
        return xp.clip(y, t(low), t(high), out=y)
    if name == "LeakyRelu":
        alpha = t(params[0] if params else 0.01)
        return xp.where(y < 0, y * alpha, y)
    if name == "Tanh":
        return xp.tanh(y, out=y)
    if name == "Sigmoid":
        xp.negative(y, out=y)
        xp.exp(y, out=y)
        y += t(1)
        return xp.reciprocal(y, out=y)
    if name == "HardSigmoid":
        alpha = params[0] if params else 0.2
        beta = params[1] if len(params) > 1 else 0.5
        y *= t(alpha)
        y += t(beta)
        return xp.clip(y, t(0), t(1), out=y)
    raise ValueError(f"unknown fused activation {name!r}")


class _Product(CupyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT) and (node.domain != FUSED_DOMAIN or activation_of(node) is not None)

    def activation(self, y: Any) -> Any:
        found = activation_of(self.node) if self.node.domain == FUSED_DOMAIN else None
        return apply_activation(self.xp, y, *found) if found and found[0] else y


@CupyProvider.kernel("MatMul")
@CupyProvider.kernel("FusedMatMul", domain=FUSED_DOMAIN)
class MatMul(_Product):
    """ONNX MatMul is numpy's matmul (1-D promotion, batch broadcasting)."""

    def run(self, a: Any, b: Any) -> Any:
        return self.activation(self.xp.matmul(a, b))


@CupyProvider.kernel("Gemm")
@CupyProvider.kernel("FusedGemm", domain=FUSED_DOMAIN)
class Gemm(_Product):
    """alpha * A' B' + beta * C, C broadcast to the product (unidirectionally)."""

    def run(self, a: Any, b: Any, c: Any = None) -> Any:
        if int(self.attr("transA", 0)):
            a = a.T
        if int(self.attr("transB", 0)):
            b = b.T
        y = self.xp.matmul(a, b)
        t = y.dtype.type
        alpha = float(self.attr("alpha", 1.0))
        if alpha != 1.0:
            y *= t(alpha)
        beta = float(self.attr("beta", 1.0))
        if c is not None and beta != 0.0:
            y += c if beta == 1.0 else c * t(beta)
        return self.activation(y)
