"""Channels-last 1x1 expansion -> 3x3 depthwise -> 1x1 projection (MobileNetV2's inverted residual
block, each conv with its activation, the last with its residual) -> one
com.onnxplug.nhwc InvertedBottleneck, when the provider of those nodes can run it.

The fused kernel works on bands of output rows: the expanded tensor, the widest of the block (six
times the input's channels at full resolution), is then used band by band as it is made instead
of going through memory whole (docs/fused-ops.md).
Runs after the layout passes, on the NHWC convolutions they leave next to each other.
"""

from __future__ import annotations

from onnxplug.fused_schemas import ACTIVATION_DEFAULTS, INVERTED_BOTTLENECK, NHWC_DOMAIN
from onnxplug.ir import Node
from onnxplug.optimizer.fused_ops import fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel

_CONVS = ("Conv", "FusedConv")
_FLOATS = ("float32", "float64")
#: FusedConv's residual input.
_RESIDUAL = 3


def _conv(index: GraphIndex, node: Node | None, kernel: tuple[int, int], residual: bool) -> bool:
    """Whether ``node`` is an NHWC Conv / FusedConv with a constant ``kernel``-sized weight (and
    constant bias, if any), no dilation or auto_pad, a supported activation, and a residual input
    only where ``residual`` allows it."""
    if node is None or node.domain != NHWC_DOMAIN or node.op_type not in _CONVS or len(node.outputs) != 1:
        return False
    if len(node.inputs) > _RESIDUAL and node.inputs[_RESIDUAL] and not residual:
        return False
    w = index.constant(node.inputs[1])
    if w is None or w.ndim != 4 or tuple(w.shape[2:]) != kernel:
        return False
    if len(node.inputs) > 2 and node.inputs[2] and index.constant(node.inputs[2]) is None:
        return False
    if node.attr("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
        return False
    if any(d != 1 for d in node.attr("dilations", [1, 1])):
        return False
    return node.op_type == "Conv" or node.attr("activation", "") in ("", *ACTIVATION_DEFAULTS)


def _pointwise(index: GraphIndex, node: Node | None, residual: bool) -> bool:
    """A 1x1 convolution of one group, stride 1, no pads."""
    return _conv(index, node, (1, 1), residual) and int(node.attr("group", 1)) == 1 \
        and all(s == 1 for s in node.attr("strides", [1, 1])) and not any(node.attr("pads", [0, 0, 0, 0]))


def _depthwise(index: GraphIndex, node: Node | None, channels: int) -> bool:
    """A 3x3 depthwise convolution of ``channels``, stride 1 or 2 on both axes, pads 1."""
    if not _conv(index, node, (3, 3), False) or int(node.attr("group", 1)) != channels:
        return False
    strides = list(node.attr("strides", [1, 1]))
    return index.constant(node.inputs[1]).shape[:2] == (channels, 1) and strides in ([1, 1], [2, 2]) \
        and list(node.attr("pads", [0, 0, 0, 0])) == [1, 1, 1, 1]


def _activation(node: Node) -> tuple[str, list[float] | None]:
    """The node's activation and its parameters (none for a plain Conv)."""
    if node.op_type == "Conv":
        return "", None
    return node.attr("activation", ""), list(node.attr("activation_params", []) or []) or None


class InvertedBottleneckFusion(GraphRewritePass):
    """Fuse an NHWC expansion, depthwise and projection chain into InvertedBottleneck."""

    level = GraphOptimizationLevel.ORT_ENABLE_LAYOUT
    changes = "NHWC 1x1 -> 3x3 depthwise -> 1x1 convolutions -> com.onnxplug.nhwc.InvertedBottleneck"
    order = 30  # after TransposeOptimization has joined the NHWC convolutions

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        # the Transposes TransposeOptimization cancelled are still there, reading the convolutions'
        # outputs: sweep them first (the manager's final sweep would)
        counts = DeadNodeElimination().rewrite(index, context)
        fused = 0
        for expand in list(index.graph.nodes):
            if not _pointwise(index, expand, False):
                continue
            dtype, shape = index.dtype_of(expand.inputs[0]), index.shape_of(expand.inputs[0])
            if str(dtype) not in _FLOATS or shape is None or len(shape) != 4 \
                    or not all(isinstance(d, int) for d in shape[1:]):
                continue  # the kernel's dtypes, and known image sizes and channels
            channels = index.constant(expand.inputs[1]).shape[0]
            depthwise = index.only_consumer(expand.outputs[0])
            if not _depthwise(index, depthwise, channels) or depthwise.inputs[0] != expand.outputs[0]:
                continue
            project = index.only_consumer(depthwise.outputs[0])
            if not _pointwise(index, project, True) or project.inputs[0] != depthwise.outputs[0]:
                continue
            if fuse(index, context, expand, depthwise, project):
                fused += 1
        return {"fused": fused, "dead_nodes": counts["nodes"], "dead_initializers": counts["initializers"]}


def fuse(index: GraphIndex, context: RewriteContext, expand: Node, depthwise: Node, project: Node) -> bool:
    """Replace the three convolutions by one InvertedBottleneck node (if the provider can run it)."""
    def bias(node: Node) -> str:
        return node.inputs[2] if len(node.inputs) > 2 else ""

    inputs = [expand.inputs[0], expand.inputs[1], bias(expand), depthwise.inputs[1], bias(depthwise),
              project.inputs[1], bias(project)]
    if len(project.inputs) > _RESIDUAL and project.inputs[_RESIDUAL]:
        inputs.append(project.inputs[_RESIDUAL])
    (expand_act, expand_params), (dw_act, dw_params), (act, params) = map(_activation, (expand, depthwise, project))
    attrs = {"strides": list(depthwise.attr("strides", [1, 1])), "pads": [1, 1, 1, 1],
             "group": int(depthwise.attr("group")),
             "expand_activation": expand_act, "expand_activation_params": expand_params,
             "depthwise_activation": dw_act, "depthwise_activation_params": dw_params,
             "activation": act, "activation_params": params}
    node = fused_node(INVERTED_BOTTLENECK, inputs, [project.outputs[0]],
                      index.names.fresh(f"{expand.name}_bottleneck"), attrs, domain=NHWC_DOMAIN)
    removed = [expand, depthwise, project]
    if not context.support.allows(index.graph, removed, node):
        return False
    index.insert(node, near=project)
    index.remove(*removed)
    return True

