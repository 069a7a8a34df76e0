"""Shape-subgraph folding: ``Shape`` (and ``Size``) of a value whose shape is known become constants.

When only some dimensions are static (a symbolic batch), the dimensions read through
``Shape -> Gather`` or ``Shape -> Slice`` are folded if those are static. Constant folding then
folds what follows (Unsqueeze, Concat, arithmetic on dims).
"""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.ir.types import Dim
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


def shape_node_dims(index: GraphIndex, node: Node) -> list[Dim] | None:
    """The dims a Shape node returns (its ``start``/``end`` applied), symbolic ones included."""
    shape = index.shape_of(node.inputs[0])
    if shape is None:
        return None
    rank = len(shape)
    start = int(node.attr("start", 0))
    end = node.attr("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else int(end)
    stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    return list(shape[start:stop])


def _all_static(dims: list[Dim]) -> bool:
    return all(isinstance(d, int) and d >= 0 for d in dims)


class ShapeFolding(GraphRewritePass):
    """Replace Shape/Size of statically shaped values, and static dims read from Shape, by constants."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Shape, Size and Shape->Gather/Slice of static dimensions become constants"
    order = 5

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"shapes": 0, "dims": 0}
        for node in list(index.graph.nodes):
            if node.domain != "" or index.is_graph_output(node.outputs[0]):
                continue
            if node.op_type == "Size":
                shape = index.static_shape(node.inputs[0])
                if shape is not None:
                    self._to_constant(index, node, np.asarray(int(np.prod(shape)), dtype=np.int64))
                    counts["shapes"] += 1
            elif node.op_type == "Shape":
                dims = shape_node_dims(index, node)
                if dims is None:
                    continue
                if _all_static(dims):
                    self._to_constant(index, node, np.asarray(dims, dtype=np.int64))
                    counts["shapes"] += 1
                else:
                    counts["dims"] += self._fold_readers(index, node, dims)
        return counts

    def _fold_readers(self, index: GraphIndex, shape_node: Node, dims: list[Dim]) -> int:
        folded = 0
        positions = np.arange(len(dims))
        for reader in index.consumers(shape_node.outputs[0]):
            if reader.domain != "" or reader.inputs[0] != shape_node.outputs[0]:
                continue
            if index.is_graph_output(reader.outputs[0]):
                continue
            picked = None
            if reader.op_type == "Gather" and int(reader.attr("axis", 0)) == 0:
                indices = index.constant(reader.inputs[1])
                if indices is not None and indices.dtype.kind in "iu" and np.all(
                        (indices >= -len(dims)) & (indices < len(dims))):
                    picked = positions[indices.astype(np.int64)]
            elif reader.op_type == "Slice" and reader.opset >= 10:
                picked = _slice_positions(index, reader, positions)
            if picked is None:
                continue
            values = [dims[int(p)] for p in np.asarray(picked).reshape(-1)]
            if _all_static(values):
                array = np.asarray(values, dtype=np.int64).reshape(np.shape(picked))
                self._to_constant(index, reader, array)
                folded += 1
        return folded

    @staticmethod
    def _to_constant(index: GraphIndex, node: Node, value: np.ndarray) -> None:
        index.remove(node)
        index.graph.initializers[node.outputs[0]] = value
        index.graph.value_info.pop(node.outputs[0], None)


def _slice_positions(index: GraphIndex, node: Node, positions: np.ndarray) -> np.ndarray | None:
    """Which positions of a 1-D value a Slice (opset >= 10, constant arguments) selects."""
    args = [index.constant(n) if n else None for n in node.inputs[1:]]
    if any(n and a is None for n, a in zip(node.inputs[1:], args)) or len(args) < 2:
        return None
    starts, ends = args[0], args[1]
    axes = args[2] if len(args) > 2 else None
    steps = args[3] if len(args) > 3 else None
    if starts.size != 1 or ends.size != 1 or (axes is not None and int(axes.reshape(-1)[0]) not in (0, -1)):
        return None
    step = 1 if steps is None else int(steps.reshape(-1)[0])
    if step == 0:
        return None
    start, end = int(starts.reshape(-1)[0]), int(ends.reshape(-1)[0])
    return positions[slice(*slice(start, end, step).indices(len(positions)))]


PASSES = [ShapeFolding]
