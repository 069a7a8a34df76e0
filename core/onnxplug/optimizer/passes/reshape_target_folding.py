"""Reshape target folding: a target built at run time from the input's own dims
(``Concat(Unsqueeze(Gather(Shape(x), i)), ..., constants)``) becomes a constant target that
copies those dims with ``0`` (or infers the one remaining dynamic dim with ``-1``)."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.ir.types import Dim
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.shape_folding import shape_node_dims
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import axes_argument, same_dim
from onnxplug.options import GraphOptimizationLevel

_DYNAMIC = "dim"


def _piece(index: GraphIndex, name: str) -> list[object] | None:
    """One Concat input: constant ints, or dims read from a Shape (as (value, dim) pairs)."""
    value = index.constant(name)
    if value is not None:
        return [int(v) for v in value.reshape(-1)] if value.dtype.kind in "iu" and value.ndim <= 1 else None
    node = index.producer.get(name)
    if node is None or node.domain != "":
        return None
    scalar_gather = False
    if node.op_type == "Unsqueeze":
        if axes_argument(index, node) not in ([0], [-1]):
            return None
        node = index.producer_of(node.inputs[0], "Gather")
        scalar_gather = True
    if node is None or node.op_type != "Gather" or int(node.attr("axis", 0)) != 0:
        return None
    shape_node = index.producer_of(node.inputs[0], "Shape")
    indices = index.constant(node.inputs[1])
    if shape_node is None or indices is None or indices.ndim != (0 if scalar_gather else 1):
        return None
    dims = shape_node_dims(index, shape_node)
    if dims is None:
        return None
    try:
        return [(_DYNAMIC, dims[int(i)]) for i in indices.reshape(-1)]
    except IndexError:
        return None


def folded_target(index: GraphIndex, data: str, concat: Node, allowzero: int) -> np.ndarray | None:
    """The constant target equivalent to a runtime-built one, or None."""
    if concat.op_type != "Concat" or concat.domain != "" or int(concat.attr("axis", 0)) not in (0, -1):
        return None
    entries: list[object] = []
    for name in concat.inputs:
        piece = _piece(index, name)
        if piece is None:
            return None
        entries.extend(piece)
    shape = index.shape_of(data)
    target: list[int] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, tuple):
            target.append(int(entry))  # type: ignore[arg-type]
            continue
        dim: Dim = entry[1]
        if isinstance(dim, int):
            target.append(dim)
        elif not allowzero and shape is not None and position < len(shape) and same_dim(shape[position], dim):
            target.append(0)  # copies the same dim from the data
        else:
            target.append(-1)  # inferred from the element count: allowed once
    if target.count(-1) > 1:
        return None
    return np.asarray(target, dtype=np.int64)


class ReshapeTargetFolding(GraphRewritePass):
    """Replace runtime-built Reshape targets by constants when the dims they read are the input's."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Reshape targets built from Shape/Gather/Concat become constants (0 copies, -1 infers)"
    order = 71

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        folded = 0
        for node in list(index.graph.nodes):
            if node.op_type != "Reshape" or node.domain != "" or node.opset < 5:
                continue
            concat = index.producer.get(node.inputs[1])
            if concat is None:
                continue
            target = folded_target(index, node.inputs[0], concat, int(node.attr("allowzero", 0)))
            if target is None:
                continue
            index.set_input(node, 1, index.add_initializer(f"{node.name}_shape", target))
            folded += 1
        return {"folded": folded}


PASSES = [ReshapeTargetFolding]
