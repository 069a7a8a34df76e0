"""Reshape chain collapsing: ``Reshape(Reshape(x, s1), s2)`` is ``Reshape(x, s2)`` when ``s2`` is a
constant that does not copy dims from the intermediate shape (no 0 entries, or allowzero=1)."""

from __future__ import annotations

from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


class ReshapeChainCollapse(GraphRewritePass):
    """Make the second of two Reshapes read the first one's input."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Reshape after Reshape reads the first one's input"
    order = 70

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        collapsed = 0
        for node in list(index.graph.nodes):
            if node.op_type != "Reshape" or node.domain != "" or node.opset < 5:
                continue
            first = index.producer_of(node.inputs[0], "Reshape")
            target = index.constant(node.inputs[1])
            if first is None or target is None:
                continue
            if not int(node.attr("allowzero", 0)) and (target == 0).any():
                continue
            index.set_input(node, 0, first.inputs[0])
            collapsed += 1
        return {"collapsed": collapsed}


PASSES = [ReshapeChainCollapse]
