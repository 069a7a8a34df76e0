"""Dropout elimination: at inference Dropout returns its input unchanged."""

from __future__ import annotations

from onnxplug.ir import Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


def is_inference_dropout(index: GraphIndex, node: Node) -> bool:
    """Whether a Dropout is the identity: no training_mode=true input and no mask that is read."""
    if len(node.outputs) > 1 and node.outputs[1] and index.is_used(node.outputs[1]):
        return False
    if len(node.inputs) > 2 and node.inputs[2]:  # training_mode (opset 12+) must be a false constant
        mode = index.constant(node.inputs[2])
        if mode is None or bool(mode.reshape(-1)[0]):
            return False
    return True


class DropoutElimination(GraphRewritePass):
    """Remove inference-mode Dropout nodes whose mask output is unused."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Dropout nodes removed (inference: identity)"
    order = 11

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        removed = 0
        for node in list(index.graph.nodes):
            if node.op_type != "Dropout" or node.domain != "" or not is_inference_dropout(index, node):
                continue
            if index.bypass(node, node.inputs[0], node.outputs[0]):
                removed += 1
        return {"removed": removed}


PASSES = [DropoutElimination]
