"""Dead-node elimination: nodes whose outputs nobody reads, and unread initializers, are removed."""

from __future__ import annotations

from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


class DeadNodeElimination(GraphRewritePass):
    """Remove nodes that contribute to no graph output, and initializers nothing reads."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "unused nodes and initializers removed"
    order = 900

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        nodes = 0
        for node in reversed(list(index.graph.nodes)):  # readers before producers: one sweep
            if not any(o and index.is_used(o) for o in node.outputs):
                index.remove(node)
                nodes += 1
        inputs = index.graph_inputs
        unused = [n for n in index.graph.initializers if n not in inputs and not index.is_used(n)]
        for name in unused:
            del index.graph.initializers[name]
        return {"nodes": nodes, "initializers": len(unused)}


PASSES = [DeadNodeElimination]
