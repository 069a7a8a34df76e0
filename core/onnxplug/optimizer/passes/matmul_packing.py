"""MatMuls that read the same input with constant weights -> one MatMul on the concatenated weights,
then a Split along the last axis (attention's Q, K and V projections of one hidden state).

    x -> MatMul(x, Wq) [-> Add bq] -> q          x -> MatMul(x, [Wq|Wk|Wv]) [-> Add [bq|bk|bv]]
    x -> MatMul(x, Wk) [-> Add bk] -> k   ==>         -> Split(axis=-1) -> q, k, v
    x -> MatMul(x, Wv) [-> Add bv] -> v

One product of N1+N2+N3 columns reads x once and is large enough to be split across threads where
three narrow ones are not. The biases are packed too when every MatMul is followed by a private
Add of a constant vector; otherwise the Adds stay on the Split's outputs. The Split's outputs keep
the replaced values' names. Only standard ops are produced, so every provider can run the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onnxplug.ir import Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute
from onnxplug.options import GraphOptimizationLevel

#: Split takes its sizes as an input from opset 13, as an attribute before.
_SPLIT_SIZES_AS_INPUT = 13


@dataclass
class _Projection:
    """One MatMul of the shared input: its node, constant weight and optional bias Add."""

    matmul: Node
    weight: np.ndarray
    add: Node | None = None
    bias: np.ndarray | None = None

    @property
    def result(self) -> str:
        return (self.add or self.matmul).outputs[0]


def _projection(index: GraphIndex, matmul: Node, source: str) -> _Projection | None:
    if matmul.op_type != "MatMul" or matmul.domain != "" or matmul.inputs[0] != source:
        return None
    weight = index.constant(matmul.inputs[1])
    dtype = index.dtype_of(source)
    if weight is None or weight.ndim != 2 or dtype is None or dtype.kind != "f" or weight.dtype != dtype:
        return None
    projection = _Projection(matmul, weight)
    add = index.only_consumer(matmul.outputs[0])
    if add is not None and add.op_type == "Add" and add.domain == "" and index.private(matmul.outputs[0], add):
        term = add.inputs[1] if add.inputs[0] == matmul.outputs[0] else add.inputs[0]
        bias = index.constant(term)
        if bias is not None and bias.dtype == dtype and bias.shape == (weight.shape[1],) and term != source:
            projection.add, projection.bias = add, bias
    return projection


class MatMulPacking(GraphRewritePass):
    """Pack MatMuls sharing their first input and having constant 2-D weights into one MatMul."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "MatMuls of one input with constant weights -> one MatMul (+ Add) and a Split"
    order = 55  # before MatMulAddToGemm turns 2-D MatMul + Add pairs into Gemms

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        packed = merged = 0
        sources = list(dict.fromkeys(n.inputs[0] for n in index.graph.nodes
                                     if n.op_type == "MatMul" and n.domain == "" and n.inputs))
        for source in sources:
            rank = index.rank_of(source)
            if rank is None or rank < 2:
                continue
            group: list[_Projection] = []
            for node in index.consumers(source):
                projection = _projection(index, node, source)
                if projection is not None and all(p.matmul is not node for p in group):
                    group.append(projection)
            group = [p for p in group if p.weight.shape[0] == group[0].weight.shape[0]] if group else []
            if len(group) < 2:
                continue
            self._pack(index, source, group)
            packed += 1
            merged += len(group)
        return {"packed": packed, "matmuls": merged}

    @staticmethod
    def _pack(index: GraphIndex, source: str, group: list[_Projection]) -> None:
        first = group[0].matmul
        dtype = index.dtype_of(source)
        widths = [p.weight.shape[1] for p in group]
        with_bias = all(p.bias is not None for p in group)
        weight = index.add_initializer(f"{first.inputs[1]}_packed", np.concatenate([p.weight for p in group], 1))
        shape = index.shape_of(source)
        packed_shape = None if shape is None else (*shape[:-1], sum(widths))
        product = index.names.fresh(f"{first.outputs[0]}_packed")
        nodes = [Node("MatMul", [source, weight], [product], index.names.fresh(f"{first.name}_packed"))]
        index.set_type(product, dtype, packed_shape)  # type: ignore[arg-type]
        if with_bias:
            bias = index.add_initializer(f"{first.name}_packed_bias",
                                         np.concatenate([p.bias for p in group]))  # type: ignore[misc]
            summed = index.names.fresh(f"{product}_bias")
            nodes.append(Node("Add", [product, bias], [summed], index.names.fresh(f"{first.name}_packed_bias")))
            index.set_type(summed, dtype, packed_shape)  # type: ignore[arg-type]
            product = summed
        # With unpacked biases the Split writes the MatMuls' outputs and the Adds stay.
        outputs = [p.result if with_bias else p.matmul.outputs[0] for p in group]
        opset = index.graph.opsets.get("", 1)
        split = Node("Split", [product], outputs, index.names.fresh(f"{first.name}_split"),
                     attributes={"axis": make_attribute(-1)})
        if opset >= _SPLIT_SIZES_AS_INPUT:
            split.inputs.append(index.add_initializer(f"{first.name}_split_sizes", np.array(widths, np.int64)))
        else:
            split.attributes["split"] = make_attribute(widths)
        nodes.append(split)
        for node in nodes:
            index.insert(node, near=first, after=False)
        index.remove(*(p.matmul for p in group))
        if with_bias:
            index.remove(*(p.add for p in group if p.add is not None))


PASSES = [MatMulPacking]
