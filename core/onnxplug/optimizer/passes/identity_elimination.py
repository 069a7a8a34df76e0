"""Identity elimination: readers of an Identity's output read its input instead."""

from __future__ import annotations

from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


class IdentityElimination(GraphRewritePass):
    """Remove Identity nodes (kept only where both sides are graph inputs/outputs)."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Identity nodes removed"
    order = 10

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        removed = 0
        for node in list(index.graph.nodes):
            if node.op_type != "Identity" or node.domain != "":
                continue
            if index.bypass(node, node.inputs[0], node.outputs[0]):
                removed += 1
        return {"removed": removed}


PASSES = [IdentityElimination]
