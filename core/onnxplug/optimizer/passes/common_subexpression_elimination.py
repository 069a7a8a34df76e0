"""Common subexpression elimination: two nodes with the same op, attributes and inputs compute the
same values, so the second one's readers read the first one's outputs."""

from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from onnxplug.ir import Attribute, Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.constant_folding import RANDOM_OPS
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel

#: Ops whose inputs may be reordered without changing the result.
COMMUTATIVE = frozenset({"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal"})


def _attr_key(a: Attribute) -> Hashable:
    value = a.value
    if isinstance(value, np.ndarray):
        return (a.type, value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return (a.type, tuple(_item_key(v) for v in value))
    return (a.type, _item_key(value))


def _item_key(v: Any) -> Hashable:
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (bytes, str, int, float, bool)) or v is None:
        return v
    return repr(v)


def node_key(node: Node) -> Hashable | None:
    """What makes two nodes compute the same values, or None for nodes never merged."""
    if node.subgraphs or (node.domain == "" and node.op_type in RANDOM_OPS):
        return None
    inputs = list(node.inputs)
    if node.domain == "" and node.op_type in COMMUTATIVE:
        inputs.sort()
    attrs = tuple(sorted((k, _attr_key(a)) for k, a in node.attributes.items()))
    return (node.domain, node.op_type, node.opset, tuple(inputs), attrs, len(node.outputs))


class CommonSubexpressionElimination(GraphRewritePass):
    """Merge nodes that compute the same thing from the same inputs."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "duplicate nodes merged"
    order = 30

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        seen: dict[Hashable, Node] = {}
        merged = 0
        for node in list(index.graph.nodes):
            key = node_key(node)
            if key is None:
                continue
            first = seen.get(key)
            if first is None:
                seen[key] = node
                continue
            if any(o and index.is_graph_output(o) for o in node.outputs):
                continue  # its name is part of the interface
            index.remove(node)
            for mine, theirs in zip(node.outputs, first.outputs):
                if mine:
                    index.replace_uses(mine, theirs)
            merged += 1
        return {"merged": merged}


PASSES = [CommonSubexpressionElimination]
