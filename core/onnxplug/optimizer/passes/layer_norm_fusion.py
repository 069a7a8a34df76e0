"""LayerNormalization fusion: the primitive spelling
``(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta`` (over trailing axes) becomes
one LayerNormalization: the standard ai.onnx op when the model imports opset >= 17, else the
com.onnxplug op of the same schema."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.optimizer.fused_ops import LAYER_NORM, ensure_domain, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.gelu_fusion import with_scalar
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import axes_argument, normalize_axes
from onnxplug.options import GraphOptimizationLevel

#: The default-domain opset from which LayerNormalization is a standard op.
STANDARD_LAYER_NORM_OPSET = 17


def trailing_axes(index: GraphIndex, node: Node) -> int | None:
    """k when a keepdims ReduceMean reduces exactly the last k axes of its input."""
    if node.op_type != "ReduceMean" or node.domain != "" or not int(node.attr("keepdims", 1)):
        return None
    axes = axes_argument(index, node, since_input=18)
    if not axes:
        return None
    rank = index.rank_of(node.inputs[0])
    if rank is None:
        ok = sorted(axes) == list(range(-len(axes), 0))
        return len(axes) if ok else None
    normalized = normalize_axes(axes, rank)
    return len(axes) if normalized == list(range(rank - len(axes), rank)) else None


def _square_of(index: GraphIndex, centered: str) -> Node | None:
    for node in index.consumers(centered):
        power = with_scalar(index, node, "Pow")
        if power is not None and power[0] == centered and power[1] == 2.0:
            return node
        if node.op_type == "Mul" and node.domain == "" and node.inputs == [centered, centered]:
            return node
    return None


def _normalized(index: GraphIndex, centered: str, std: str) -> tuple[Node, list[Node]] | None:
    """Div(centered, std) or Mul(centered, Reciprocal(std)); returns the node giving the result."""
    div = index.only_consumer(std)
    if div is not None and div.op_type == "Div" and div.domain == "" and div.inputs == [centered, std]:
        return div, [div]
    recip = index.only_consumer(std)
    if recip is not None and recip.op_type == "Reciprocal" and recip.domain == "":
        mul = index.only_consumer(recip.outputs[0])
        if mul is not None and mul.op_type == "Mul" and sorted(mul.inputs) == sorted([centered, recip.outputs[0]]):
            return mul, [recip, mul]
    return None


def _affine(index: GraphIndex, value: str, op_type: str, norm_shape: tuple) -> tuple[Node, np.ndarray] | None:
    """A private Mul/Add of ``value`` by a constant shaped like the normalized dims."""
    node = index.only_consumer(value)
    if node is None or node.op_type != op_type or node.domain != "" or len(node.inputs) != 2:
        return None
    other = node.inputs[1] if node.inputs[0] == value else node.inputs[0]
    constant = index.constant(other)
    if constant is None:
        return None
    squeezed = constant.reshape(constant.shape[next((i for i, d in enumerate(constant.shape) if d != 1),
                                                    constant.ndim):])
    if squeezed.shape != norm_shape:
        return None
    return node, squeezed


def replace_with_norm(index: GraphIndex, context: RewriteContext, op_type: str, standard_opset: int, name: str,
                      x: str, params: list[tuple[str, np.ndarray]], output: str, nodes: list[Node],
                      attributes: dict) -> bool:
    """Replace ``nodes`` by one ``op_type`` node of ``x`` and constant ``params`` (initializers named
    ``name``_suffix): the ai.onnx op when the model imports ``standard_opset`` or later, else
    com.onnxplug's of the same schema. False, and nothing changed, when the provider that would
    run ``nodes`` cannot run it."""
    standard = index.graph.opsets.get("", 0) >= standard_opset
    inputs = [x] + [index.add_initializer(f"{name}_{suffix}", value) for suffix, value in params]
    node = fused_node(op_type, inputs, [output], index.names.fresh(name), attributes,
                      domain="" if standard else "com.onnxplug")
    if standard:
        node.opset = index.graph.opsets[""]
    if not context.support.allows(index.graph, nodes, node):
        for initializer in inputs[1:]:
            del index.graph.initializers[initializer]
        return False
    if not standard:
        ensure_domain(index.graph)
    index.insert(node, near=nodes[-1])
    index.remove(*nodes)
    return True


class LayerNormFusion(GraphRewritePass):
    """Fuse LayerNorm spelled with ReduceMean/Sub/Pow/Add/Sqrt/Div/Mul/Add."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "primitive LayerNorm -> LayerNormalization (ai.onnx from opset 17, else com.onnxplug)"
    order = 50

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        fused = 0
        for mean in list(index.graph.nodes):
            if not any(n is mean for n in index.graph.nodes):
                continue
            k = trailing_axes(index, mean)
            match = self._match(index, mean, k) if k else None
            if match is None:
                continue
            fused += self._replace(index, context, mean, k, match)
        return {"fused": fused}

    @staticmethod
    def _replace(index: GraphIndex, context: RewriteContext, mean: Node, k: int, match: tuple) -> bool:
        x, output, nodes, gamma, beta, epsilon = match
        params = [("scale", gamma)] + ([("bias", beta)] if beta is not None else [])
        return replace_with_norm(index, context, LAYER_NORM, STANDARD_LAYER_NORM_OPSET, f"{mean.name}_layernorm",
                                 x, params, output, nodes, {"axis": -k, "epsilon": epsilon})

    @staticmethod
    def _match(index: GraphIndex, mean: Node, k: int) -> tuple | None:
        x = mean.inputs[0]
        sub = index.only_consumer(mean.outputs[0])
        if sub is None or sub.op_type != "Sub" or sub.domain != "" or sub.inputs != [x, mean.outputs[0]]:
            return None
        centered = sub.outputs[0]
        square = _square_of(index, centered)
        if square is None or index.is_graph_output(centered):
            return None
        variance = index.only_consumer(square.outputs[0])
        if variance is None or trailing_axes(index, variance) != k:
            return None
        shifted = index.only_consumer(variance.outputs[0])
        eps = with_scalar(index, shifted, "Add")
        if shifted is None or eps is None or eps[0] != variance.outputs[0] or not 0 < eps[1] < 1e-2:
            return None
        sqrt = index.only_consumer(shifted.outputs[0])
        if sqrt is None or sqrt.op_type != "Sqrt" or sqrt.domain != "":
            return None
        found = _normalized(index, centered, sqrt.outputs[0])
        if found is None or len(index.consumers(centered)) != 2:
            return None
        last, norm_nodes = found
        nodes = [mean, sub, square, variance, shifted, sqrt, *norm_nodes]
        shape = index.shape_of(x)
        if shape is None or not all(isinstance(d, int) for d in shape[-k:]):
            return None
        norm_shape = tuple(int(d) for d in shape[-k:])
        dtype = index.dtype_of(x) or np.dtype(np.float32)
        gamma, beta = np.ones(norm_shape, dtype), None
        scale = _affine(index, last.outputs[0], "Mul", norm_shape)
        if scale is not None:
            last, gamma = scale
            nodes.append(last)
            shift = _affine(index, last.outputs[0], "Add", norm_shape)
            if shift is not None:
                last, beta = shift
                nodes.append(last)
        if gamma.dtype != dtype or (beta is not None and beta.dtype != dtype):
            return None
        return x, last.outputs[0], nodes, np.ascontiguousarray(gamma), beta, float(eps[1])


PASSES = [LayerNormFusion]
