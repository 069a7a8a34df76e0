"""Unsqueeze/Squeeze pair elimination: ``Squeeze(Unsqueeze(x, a), a)`` and
``Unsqueeze(Squeeze(x, a), a)`` are ``x`` when both name the same axes."""

from __future__ import annotations

from onnxplug.ir import Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import axes_argument, normalize_axes
from onnxplug.options import GraphOptimizationLevel

_PAIRS = {"Squeeze": "Unsqueeze", "Unsqueeze": "Squeeze"}


def _cancels(index: GraphIndex, outer: Node, inner: Node) -> bool:
    """Both axes lists, normalized against the rank of the inner node's input, are equal."""
    outer_axes, inner_axes = axes_argument(index, outer), axes_argument(index, inner)
    if not outer_axes or not inner_axes:  # a Squeeze without axes depends on the shape: left alone
        return False
    rank = index.rank_of(inner.inputs[0])
    # Squeeze's axes count in its input's rank; Unsqueeze's in its output's: both are x's rank.
    a, b = normalize_axes(outer_axes, rank), normalize_axes(inner_axes, rank)
    if inner.op_type == "Unsqueeze" and rank is not None:  # Unsqueeze(x) has rank + len(axes)
        wide = rank + len(inner_axes)
        a, b = normalize_axes(outer_axes, wide), normalize_axes(inner_axes, wide)
    return a is not None and a == b


class UnsqueezeSqueezeElimination(GraphRewritePass):
    """Remove Squeeze/Unsqueeze pairs that undo each other."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Unsqueeze->Squeeze and Squeeze->Unsqueeze pairs on the same axes removed"
    order = 13

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        removed = 0
        for node in list(index.graph.nodes):
            partner = _PAIRS.get(node.op_type) if node.domain == "" else None
            inner = index.producer_of(node.inputs[0], partner) if partner else None
            if inner is None or not _cancels(index, node, inner):
                continue
            if index.bypass(node, inner.inputs[0], node.outputs[0]):
                removed += 1
        return {"pairs": removed}


PASSES = [UnsqueezeSqueezeElimination]
