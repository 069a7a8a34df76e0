"""Gemm / MatMul + activation -> com.onnxplug FusedGemm / FusedMatMul, when the provider of the
Gemm or MatMul can run the fused op."""

from __future__ import annotations

from onnxplug.optimizer.fused_ops import FUSED_GEMM, FUSED_MATMUL
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.conv_activation_fusion import fuse_activation
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel

_TARGETS = {"Gemm": FUSED_GEMM, "MatMul": FUSED_MATMUL}


class GemmActivationFusion(GraphRewritePass):
    """Fuse Gemm or MatMul with the activation after it."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "Gemm/MatMul + activation -> com.onnxplug.FusedGemm/FusedMatMul"
    order = 20

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"Gemm": 0, "MatMul": 0}
        for node in list(index.graph.nodes):
            target = _TARGETS.get(node.op_type) if node.domain == "" else None
            if target is not None and fuse_activation(index, context, node, target):
                counts[node.op_type] += 1
        return counts


PASSES = [GemmActivationFusion]
