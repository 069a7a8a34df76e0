"""Conv + activation, and Conv + residual Add (+ activation) -> com.onnxplug FusedConv (activation
Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid with ``activation_params``, or none after a
residual; the residual is FusedConv's optional input Z, added before the activation), when the
provider of those nodes can run FusedConv."""

from __future__ import annotations

from onnxplug.ir import Node
from onnxplug.optimizer.fused_ops import FUSED_CONV, activation_params, ensure_domain, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import same_shape
from onnxplug.options import GraphOptimizationLevel


def _activation_of(index: GraphIndex, value: str) -> tuple[Node, list[float]] | None:
    """The fusable activation that alone reads ``value``, with its parameters."""
    act = index.only_consumer(value)
    params = activation_params(index, act) if act is not None else None
    if act is None or params is None or act.inputs[0] != value:
        return None
    return act, params


def _residual(index: GraphIndex, conv: Node) -> tuple[Node, str] | None:
    """An Add that alone reads the Conv output and adds a same-shaped tensor Z: (add, Z)."""
    add = index.only_consumer(conv.outputs[0])
    if add is None or add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2:
        return None
    z = add.inputs[1] if add.inputs[0] == conv.outputs[0] else add.inputs[0]
    if z == conv.outputs[0] or not same_shape(index.shape_of(z), index.shape_of(conv.outputs[0])):
        return None
    return add, z


def fuse_activation(index: GraphIndex, context: RewriteContext, main: Node, op_type: str,
                    residual: bool = False) -> bool:
    """Fuse ``main`` and the activation after it into ``op_type``; with ``residual``, ``main``
    and the Add of a same-shaped tensor after it, plus the activation if there is one. True if done."""
    if len(main.outputs) != 1:
        return False
    inputs, removed, value = list(main.inputs), [main], main.outputs[0]
    if residual:
        found = _residual(index, main)
        if found is None:
            return False
        add, z = found
        inputs = (inputs + ["", ""])[:3] + [z]
        removed.append(add)
        value = add.outputs[0]
    found_act = _activation_of(index, value)
    if found_act is None and not residual:
        return False
    if found_act is not None:  # a residual Add alone is fused too, with activation ""
        act, params = found_act
        removed.append(act)
    attrs = {k: a for k, a in main.attributes.items()}
    attrs["activation"] = act.op_type if found_act else ""  # type: ignore[assignment]
    attrs["activation_params"] = (params or None) if found_act else None  # type: ignore[assignment]
    fused = fused_node(op_type, inputs, [removed[-1].outputs[0]], index.names.fresh(f"{main.name}_fused"), attrs)
    if not context.support.allows(index.graph, removed, fused):
        return False
    ensure_domain(index.graph)
    index.insert(fused, near=removed[-1])
    index.remove(*removed)
    return True


class ConvActivationFusion(GraphRewritePass):
    """Fuse Conv with the activation after it."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "Conv + activation, Conv + residual Add (+ activation) -> com.onnxplug.FusedConv"
    order = 10

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"fused": 0, "with_residual": 0}
        for node in list(index.graph.nodes):
            if node.op_type != "Conv" or node.domain != "" or len(node.inputs) > 3:
                continue
            if fuse_activation(index, context, node, FUSED_CONV, residual=True):
                counts["with_residual"] += 1
            elif fuse_activation(index, context, node, FUSED_CONV):
                counts["fused"] += 1
        return counts


PASSES = [ConvActivationFusion]
