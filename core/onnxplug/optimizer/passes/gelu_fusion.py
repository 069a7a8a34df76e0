"""GELU fusion: the erf form ``x * 0.5 * (1 + erf(x / sqrt(2)))`` and the tanh form
``x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` -> com.onnxplug Gelu
(``approximate="none"`` / ``"tanh"``), in the operand orders exporters produce."""

from __future__ import annotations

import math

from onnxplug.ir import Node
from onnxplug.optimizer.fused_ops import GELU, ensure_domain, fused_node, near, scalar_of
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


def with_scalar(index: GraphIndex, node: Node | None, op_type: str) -> tuple[str, float] | None:
    """(the other input, the constant) of a binary ``op_type`` node with one scalar constant input."""
    if node is None or node.op_type != op_type or node.domain != "" or len(node.inputs) != 2:
        return None
    for side in (1, 0):
        value = scalar_of(index, node.inputs[side])
        if value is not None and (side == 1 or op_type in ("Mul", "Add")):
            return node.inputs[1 - side], value
    return None


def _private_reader(index: GraphIndex, name: str, op_type: str) -> Node | None:
    reader = index.only_consumer(name)
    return reader if reader is not None and reader.op_type == op_type and reader.domain == "" else None


def match_gelu_tail(index: GraphIndex, core: Node, x: str) -> tuple[str, list[Node]] | None:
    """From ``erf(...)`` or ``tanh(...)``: ``x * 0.5 * (1 + core)`` in any association.
    Returns the output and the nodes after ``core``."""
    add = _private_reader(index, core.outputs[0], "Add")
    match = with_scalar(index, add, "Add")
    if add is None or match is None or not near(match[1], 1.0):
        return None
    first = _private_reader(index, add.outputs[0], "Mul")
    if first is None:
        return None
    other = first.inputs[1] if first.inputs[0] == add.outputs[0] else first.inputs[0]
    if other == x or near(scalar_of(index, other), 0.5):  # (x * s) * 0.5 or (0.5 * s) * x
        second = _private_reader(index, first.outputs[0], "Mul")
        if second is None:
            return None
        last = second.inputs[1] if second.inputs[0] == first.outputs[0] else second.inputs[0]
        wanted_half = other == x
        if (wanted_half and near(scalar_of(index, last), 0.5)) or (not wanted_half and last == x):
            return second.outputs[0], [add, first, second]
        return None
    half = index.producer.get(other)  # s * (x * 0.5)
    match = with_scalar(index, half, "Mul")
    if half is not None and match is not None and match[0] == x and near(match[1], 0.5):
        nodes = [add, first] + ([half] if index.private(other, first) else [])
        return first.outputs[0], nodes
    return None


def _erf_head(index: GraphIndex, erf: Node) -> tuple[str, list[Node]] | None:
    scaled = index.producer.get(erf.inputs[0])
    if scaled is None or not index.private(erf.inputs[0], erf):
        return None
    div = with_scalar(index, scaled, "Div")
    if div is not None and near(div[1], math.sqrt(2.0)):
        return div[0], [scaled]
    mul = with_scalar(index, scaled, "Mul")
    if mul is not None and near(mul[1], 1.0 / math.sqrt(2.0)):
        return mul[0], [scaled]
    return None


def _tanh_head(index: GraphIndex, tanh: Node) -> tuple[str, list[Node]] | None:
    outer = index.producer.get(tanh.inputs[0])
    scale = with_scalar(index, outer, "Mul")
    if outer is None or scale is None or not near(scale[1], math.sqrt(2.0 / math.pi)):
        return None
    inner = index.producer_of(scale[0], "Add")
    if inner is None or not index.private(tanh.inputs[0], tanh) or not index.private(scale[0], outer):
        return None
    for side in (0, 1):
        x, term = inner.inputs[side], inner.inputs[1 - side]
        cubic = index.producer.get(term)
        coeff = with_scalar(index, cubic, "Mul")
        if cubic is None or coeff is None or not near(coeff[1], 0.044715) or not index.private(term, inner):
            continue
        cube_nodes = _cube_of(index, coeff[0], x)
        if cube_nodes is not None and index.private(coeff[0], cubic):
            return x, [outer, inner, cubic, *cube_nodes]
    return None


def _cube_of(index: GraphIndex, name: str, x: str) -> list[Node] | None:
    """The nodes computing ``x ** 3`` as Pow(x, 3) or x * (x * x) / (x * x) * x."""
    node = index.producer.get(name)
    if node is None or node.domain != "":
        return None
    power = with_scalar(index, node, "Pow")
    if power is not None and power[0] == x and power[1] == 3.0:
        return [node]
    if node.op_type == "Mul" and x in node.inputs:
        square_name = node.inputs[1] if node.inputs[0] == x else node.inputs[0]
        square = index.producer_of(square_name, "Mul")
        if square is not None and square.inputs == [x, x] and index.private(square_name, node):
            return [node, square]
    return None


class GeluFusion(GraphRewritePass):
    """Fuse the erf and tanh spellings of GELU into one com.onnxplug Gelu node."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "GELU spelled with Erf or Tanh -> com.onnxplug.Gelu"
    order = 30

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"erf": 0, "tanh": 0}
        for node in list(index.graph.nodes):
            if node.domain != "" or node.op_type not in ("Erf", "Tanh"):
                continue
            if not any(n is node for n in index.graph.nodes):  # removed by an earlier match
                continue
            head = _erf_head(index, node) if node.op_type == "Erf" else _tanh_head(index, node)
            if head is None:
                continue
            x, head_nodes = head
            tail = match_gelu_tail(index, node, x)
            if tail is None:
                continue
            output, tail_nodes = tail
            approximate = "none" if node.op_type == "Erf" else "tanh"
            gelu = fused_node(GELU, [x], [output], index.names.fresh(f"{node.name}_gelu"),
                              {"approximate": approximate})
            if not context.support.allows(index.graph, [node, *head_nodes, *tail_nodes], gelu):
                continue
            ensure_domain(index.graph)
            index.insert(gelu, near=tail_nodes[-1])
            index.remove(*head_nodes, node, *tail_nodes)
            counts["erf" if approximate == "none" else "tanh"] += 1
        return counts


PASSES = [GeluFusion]
