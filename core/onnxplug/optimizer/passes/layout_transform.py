"""Layout transformation: a provider may ask for channels-last (NHWC) ops.

A provider opts in with a method ``preferred_layout(node) -> "NHWC" | None`` (read with getattr,
so it is no part of the core interface) and kernels for the op in domain
``com.onnxplug.nhwc`` (same op type and attributes; the first input and the output are
channels-last, weights unchanged). For each such node this pass inserts a Transpose to NHWC
before it and one back after it; :mod:`transpose_optimization` then cancels the pairs between
neighbouring NHWC nodes, so transposes remain only at the boundaries of NHWC regions.
"""

from __future__ import annotations

import logging

from onnxplug.ir import Node
from onnxplug.optimizer.functions import channels_first_perm, channels_last_perm
from onnxplug.optimizer.fused_ops import NHWC_DOMAIN, OWN_DOMAIN, ensure_domain, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute
from onnxplug.options import GraphOptimizationLevel

logger = logging.getLogger("onnxplug.optimizer")

#: Ops whose first input and output carry the channel axis second (NCHW...).
LAYOUT_SENSITIVE = {
    "": frozenset({"Conv", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"}),
    OWN_DOMAIN: frozenset({"FusedConv"}),
}
NHWC = "NHWC"


def preferred_layout(provider: object, node: Node) -> str | None:
    """What layout ``provider`` asks for ``node`` (None: the standard one)."""
    ask = getattr(provider, "preferred_layout", None)
    if not callable(ask):
        return None
    try:
        return ask(node)
    except Exception as e:  # a provider's wish must not break optimization
        logger.debug("preferred_layout of %s failed on %s: %s", getattr(provider, "name", "?"), node.describe(), e)
        return None


class LayoutTransform(GraphRewritePass):
    """Rewrite nodes to channels-last where their provider asks for it."""

    level = GraphOptimizationLevel.ORT_ENABLE_LAYOUT
    changes = "nodes a provider wants channels-last -> com.onnxplug.nhwc ops between Transposes"
    order = 10

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        changed = 0
        for node in list(index.graph.nodes):
            if node.op_type not in LAYOUT_SENSITIVE.get(node.domain, ()):
                continue
            shape = index.shape_of(node.inputs[0])
            if shape is None or len(shape) < 3 or len(node.outputs) != 1:
                continue
            provider = context.support.claimant(index.graph, node)
            wish = preferred_layout(provider, node) if provider is not None else None
            if wish is None:
                continue
            if wish != NHWC:
                logger.info("provider %s asked layout %r for %s; only NHWC is implemented",
                            provider.name, wish, node.describe())  # type: ignore[union-attr]
                continue
            rank = len(shape)
            channels_last = fused_node(
                node.op_type, [index.names.fresh(f"{node.inputs[0]}_nhwc"), *node.inputs[1:]],
                [index.names.fresh(f"{node.outputs[0]}_nhwc")], index.names.fresh(f"{node.name}_nhwc"),
                dict(node.attributes), domain=NHWC_DOMAIN)
            if not context.support.can_run(provider, index.graph, channels_last):  # type: ignore[arg-type]
                continue
            ensure_domain(index.graph, NHWC_DOMAIN)
            to_last = Node("Transpose", [node.inputs[0]], [channels_last.inputs[0]],
                           index.names.fresh(f"{node.name}_to_nhwc"),
                           attributes={"perm": make_attribute(channels_last_perm(rank))})
            to_first = Node("Transpose", [channels_last.outputs[0]], [node.outputs[0]],
                            index.names.fresh(f"{node.name}_to_nchw"),
                            attributes={"perm": make_attribute(channels_first_perm(rank))})
            dtype = index.dtype_of(node.inputs[0])
            if dtype is not None:
                index.set_type(channels_last.inputs[0], dtype, tuple(shape[p] for p in channels_last_perm(rank)))
                out_shape = index.shape_of(node.outputs[0])
                if out_shape is not None:
                    index.set_type(channels_last.outputs[0], dtype,
                                   tuple(out_shape[p] for p in channels_last_perm(rank)))
            index.insert(to_last, near=node, after=False)
            index.insert(channels_last, near=node, after=False)
            index.remove(node)
            index.insert(to_first, near=channels_last)
            changed += 1
        return {"nhwc": changed}


PASSES = [LayoutTransform]
