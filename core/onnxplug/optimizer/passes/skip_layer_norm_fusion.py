"""SkipLayerNormalization fusion: ``LayerNorm(a + b [+ bias])`` over the last axis, the residual
pattern of transformers, -> com.onnxplug SkipLayerNormalization(a, b, gamma, beta, bias).
When the sum is read elsewhere (or returned), the fused node also outputs it."""

from __future__ import annotations

from onnxplug.ir import Node
from onnxplug.optimizer.fused_ops import LAYER_NORM, OWN_DOMAIN, SKIP_LAYER_NORM, ensure_domain, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import same_shape
from onnxplug.options import GraphOptimizationLevel


def _last_axis_norm(index: GraphIndex, node: Node) -> bool:
    if node.op_type != LAYER_NORM or node.domain not in ("", OWN_DOMAIN) or len(node.outputs) != 1:
        return False
    axis, rank = int(node.attr("axis", -1)), index.rank_of(node.inputs[0])
    if axis != -1 and (rank is None or axis != rank - 1):
        return False
    scale = index.constant(node.inputs[1])
    bias = index.constant(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if scale is None or scale.ndim != 1 or (len(node.inputs) > 2 and node.inputs[2] and bias is None):
        return False
    return bias is None or bias.shape == scale.shape


def _split_bias(index: GraphIndex, name: str, size: int) -> tuple[str, str, Node] | None:
    """``name = value + bias`` with a constant [size] bias and a same-shaped value: (value, bias, add)."""
    add = index.producer_of(name, "Add")
    if add is None or len(add.inputs) != 2:
        return None
    for side in (0, 1):
        value, bias = add.inputs[side], index.constant(add.inputs[1 - side])
        if bias is None or bias.ndim != 1 or bias.size != size or index.constant(value) is not None:
            continue
        if same_shape(index.shape_of(value), index.shape_of(name)):
            return value, add.inputs[1 - side], add
    return None


class SkipLayerNormFusion(GraphRewritePass):
    """Fuse the residual Add (and a bias Add before it) into the LayerNormalization after it."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "Add (+ bias) + LayerNormalization -> com.onnxplug.SkipLayerNormalization"
    order = 60

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"fused": 0, "with_bias": 0}
        for norm in list(index.graph.nodes):
            if not _last_axis_norm(index, norm):
                continue
            add = index.producer_of(norm.inputs[0], "Add")
            if add is None or len(add.inputs) != 2:
                continue
            a, b = add.inputs
            shape_a, shape_b = index.shape_of(a), index.shape_of(b)
            if not same_shape(shape_a, shape_b) or not shape_a:
                continue
            size = index.constant(norm.inputs[1]).size  # type: ignore[union-attr]
            if shape_a[-1] != size:
                continue
            removed = [add, norm]
            bias = ""
            for side, name in ((1, b), (0, a)):  # the bias usually ends the branch added to the skip
                split = _split_bias(index, name, size)
                if split is not None and index.private(name, add):
                    value, bias, bias_add = split
                    a, b = (a, value) if side == 1 else (value, b)
                    removed.append(bias_add)
                    break
            total = norm.inputs[0]
            outputs = [norm.outputs[0]]
            if len(index.consumers(total)) > 1 or index.is_graph_output(total):
                outputs.append(total)
            beta = norm.inputs[2] if len(norm.inputs) > 2 else ""
            inputs = [a, b, norm.inputs[1], beta, bias]
            while inputs and not inputs[-1]:
                inputs.pop()
            node = fused_node(SKIP_LAYER_NORM, inputs, outputs, index.names.fresh(f"{norm.name}_skip"),
                              {"epsilon": float(norm.attr("epsilon", 1e-5))})
            if not context.support.allows(index.graph, [norm, *removed], node):
                continue
            ensure_domain(index.graph)
            index.insert(node, near=norm)
            index.remove(*removed)
            counts["fused"] += 1
            counts["with_bias"] += bool(bias)
        return counts


PASSES = [SkipLayerNormFusion]
