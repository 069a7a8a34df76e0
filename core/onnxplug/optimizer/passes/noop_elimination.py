"""No-op elimination: Cast, Reshape, Transpose, Pad, Slice, Expand and one-input Concat that
return their input unchanged are removed. Each check needs the input's type or shape known."""

from __future__ import annotations

from typing import Callable

import numpy as np

from onnxplug.ir import Node
from onnxplug.ir.types import elem_type_of
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import TO_END, reshape_dims, same_shape
from onnxplug.options import GraphOptimizationLevel


def _cast(index: GraphIndex, node: Node) -> bool:
    t = index.type_of(node.inputs[0])
    if t is not None and t.kind == "tensor" and t.elem_type:
        return t.elem_type == int(node.attr("to", -1))
    constant = index.constant(node.inputs[0])
    return constant is not None and elem_type_of(constant.dtype) == int(node.attr("to", -1))


def _reshape(index: GraphIndex, node: Node) -> bool:
    shape = index.shape_of(node.inputs[0])
    target = index.constant(node.inputs[1]) if node.opset >= 5 else np.asarray(node.attr("shape", []))
    if shape is None or target is None:
        return False
    return same_shape(reshape_dims(shape, target, int(node.attr("allowzero", 0))), shape)


def _transpose(index: GraphIndex, node: Node) -> bool:
    perm = node.attr("perm")
    if perm is None:
        rank = index.rank_of(node.inputs[0])
        return rank is not None and rank <= 1
    return list(perm) == list(range(len(perm)))


def _pad(index: GraphIndex, node: Node) -> bool:
    if node.opset < 11:
        pads = node.attr("pads", node.attr("paddings"))
        return pads is not None and not any(pads)
    if len(node.inputs) < 2 or not node.inputs[1]:
        return False
    pads = index.constant(node.inputs[1])
    return pads is not None and not np.any(pads)


def _slice(index: GraphIndex, node: Node) -> bool:
    shape = index.shape_of(node.inputs[0])
    if shape is None:
        return False
    if node.opset < 10:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
        if starts is None or ends is None:
            return False
    else:
        args = [index.constant(n) if n else None for n in node.inputs[1:]]
        if any(n and a is None for n, a in zip(node.inputs[1:], args)) or len(args) < 2:
            return False
        starts, ends = args[0], args[1]
        axes = args[2] if len(args) > 2 else None
        steps = args[3] if len(args) > 3 else None
    starts = [int(v) for v in np.asarray(starts).reshape(-1)]
    ends = [int(v) for v in np.asarray(ends).reshape(-1)]
    axes = list(range(len(starts))) if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(s) for s in np.asarray(steps).reshape(-1)]
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = axis + len(shape) if axis < 0 else axis
        if step != 1 or not 0 <= axis < len(shape):
            return False
        dim = shape[axis]
        if start != 0 and not (isinstance(dim, int) and start <= -dim):
            return False
        if end < TO_END and not (isinstance(dim, int) and end >= dim):
            return False
    return True


def _expand(index: GraphIndex, node: Node) -> bool:
    shape = index.shape_of(node.inputs[0])
    target = index.constant(node.inputs[1])
    if shape is None or target is None or target.size > len(shape):
        return False
    tail = shape[len(shape) - target.size:]
    return all(int(t) == 1 or (isinstance(d, int) and d == int(t)) for d, t in zip(tail, target.reshape(-1)))


def _concat(index: GraphIndex, node: Node) -> bool:
    return len(node.inputs) == 1


_CHECKS: dict[str, Callable[[GraphIndex, Node], bool]] = {
    "Cast": _cast, "Reshape": _reshape, "Transpose": _transpose, "Pad": _pad, "Slice": _slice,
    "Expand": _expand, "Concat": _concat,
}


class NoOpElimination(GraphRewritePass):
    """Remove shape and type ops that leave their input as it is."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "no-op Cast/Reshape/Transpose/Pad/Slice/Expand/Concat removed"
    order = 12

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in list(index.graph.nodes):
            check = _CHECKS.get(node.op_type) if node.domain == "" else None
            if check is None or not node.inputs or not node.inputs[0] or not check(index, node):
                continue
            if index.bypass(node, node.inputs[0], node.outputs[0]):
                counts[node.op_type] = counts.get(node.op_type, 0) + 1
        return counts


PASSES = [NoOpElimination]
