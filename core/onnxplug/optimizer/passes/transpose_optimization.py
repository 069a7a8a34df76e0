"""Transpose optimization: transposes are pushed down through elementwise ops and cancelled in pairs.

After the layout pass, a channels-last region looks like ``NHWC op -> T(to NCHW) -> Relu ->
T(to NHWC) -> NHWC op``. Moving the first Transpose below the Relu (elementwise ops do not care
about layout) brings the two together, and ``T(p2) after T(p1)`` with ``p1`` then ``p2`` giving the
identity is removed; other consecutive pairs become one Transpose.
"""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute
from onnxplug.options import GraphOptimizationLevel

#: Elementwise ops with one tensor input (other inputs, if any, must be scalar constants).
UNARY = frozenset({"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Clip", "Abs",
                   "Neg", "Exp", "Log", "Sqrt", "Erf", "Elu", "Selu", "Softplus", "Cast", "Identity"})
#: Elementwise ops with broadcasting tensor inputs.
BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Pow"})


def _perm(node: Node) -> list[int] | None:
    perm = node.attr("perm")
    return None if perm is None else [int(p) for p in perm]


def _transpose(index: GraphIndex, name: str) -> Node | None:
    node = index.producer_of(name, "Transpose")
    return node if node is not None and _perm(node) is not None else None


class TransposeOptimization(GraphRewritePass):
    """Push Transposes below elementwise ops and merge or cancel consecutive Transposes."""

    level = GraphOptimizationLevel.ORT_ENABLE_LAYOUT
    changes = "Transposes pushed through elementwise ops; Transpose pairs cancelled"
    order = 20

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"pushed": 0, "cancelled": 0, "merged": 0}
        progress = True
        while progress:  # to a fixed point here: a chain of N ops needs N pushes
            progress = False
            for node in list(index.graph.nodes):
                if not any(n is node for n in index.graph.nodes):
                    continue
                if node.op_type == "Transpose" and node.domain == "":
                    key = self._merge(index, node)
                elif node.domain == "" and (node.op_type in UNARY or node.op_type in BINARY):
                    key = "pushed" if self._push(index, node) else None
                else:
                    key = None
                if key:
                    counts[key] += 1
                    progress = True
        return counts

    @staticmethod
    def _merge(index: GraphIndex, outer: Node) -> str | None:
        inner = _transpose(index, outer.inputs[0])
        p2 = _perm(outer)
        if inner is None or p2 is None:
            return None
        p1 = _perm(inner)
        combined = [p1[i] for i in p2]  # type: ignore[index]
        if combined == list(range(len(combined))):
            return "cancelled" if index.bypass(outer, inner.inputs[0], outer.outputs[0]) else None
        outer.attributes["perm"] = make_attribute(combined)
        index.set_input(outer, 0, inner.inputs[0])
        return "merged"

    @staticmethod
    def _push(index: GraphIndex, node: Node) -> bool:
        """``op(T(a), T(b), c)`` -> ``T(op(a, b, c'))`` when each T is read only by ``op`` and the
        constants are scalars or full-rank (then permuted back)."""
        if len(node.outputs) != 1:
            return False
        count = 1 if node.op_type in UNARY else len(node.inputs)
        for name in node.inputs[count:]:  # Clip bounds and the like: scalars only
            constant = index.constant(name) if name else None
            if name and (constant is None or constant.size != 1):
                return False
        perm: list[int] | None = None
        for name in node.inputs[:count]:
            transpose = _transpose(index, name)
            if transpose is not None and index.private(name, node):
                if perm is not None and _perm(transpose) != perm:
                    return False
                perm = _perm(transpose)
        if perm is None:
            return False
        new_inputs = list(node.inputs)
        for position, name in enumerate(node.inputs[:count]):
            transpose = _transpose(index, name)
            constant = index.constant(name)
            if transpose is not None and index.private(name, node):
                new_inputs[position] = transpose.inputs[0]
            elif constant is not None and constant.size == 1:
                continue
            elif constant is not None and constant.ndim == len(perm):
                new_inputs[position] = index.add_initializer(
                    f"{name}_permuted", np.ascontiguousarray(np.transpose(constant, np.argsort(perm))))
            else:
                return False  # a tensor input in the other layout
        result = node.outputs[0]
        inner = index.names.fresh(f"{result}_pre_transpose")
        shape, dtype = index.shape_of(result), index.dtype_of(result)
        if shape is not None and dtype is not None and len(shape) == len(perm):
            inverse = np.argsort(perm)  # result = T(inner): inner dim j is result dim inverse[j]
            index.set_type(inner, dtype, tuple(shape[int(i)] for i in inverse))
        index.set_inputs(node, new_inputs)
        index.set_output(node, 0, inner)
        index.insert(Node("Transpose", [inner], [result], index.names.fresh(f"{node.name}_transpose"),
                          attributes={"perm": make_attribute(perm)}), near=node)
        return True


PASSES = [TransposeOptimization]
