"""Layout transformation: a provider may ask for channels-last (NHWC) ops.

A provider opts in with :meth:`~onnxplug.provider.ExecutionProvider.preferred_layout` (a
one-argument ``preferred_layout(node)`` override is accepted too) and kernels for the op in
domain ``com.onnxplug.nhwc`` (same op type and attributes; the first input, FusedConv's residual
Z and the output are channels-last, weights unchanged). Every node is asked on the graph as it
stands before any rewrite, so a provider can choose whole regions. For each node it wants
channels-last this pass inserts a Transpose to NHWC before it (and before Z) and one back after
it; :mod:`transpose_optimization` then cancels the pairs between neighbouring NHWC nodes, so
transposes remain only at the boundaries of NHWC regions.
"""

from __future__ import annotations

import inspect

from onnxplug.fused_schemas import NHWC_DOMAIN, OWN_DOMAIN
from onnxplug.ir import Graph, Node
from onnxplug.logs import get_logger
from onnxplug.optimizer.functions import channels_first_perm, channels_last_perm
from onnxplug.optimizer.fused_ops import ensure_domain, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute
from onnxplug.options import GraphOptimizationLevel
from onnxplug.provider import ExecutionProvider

logger = get_logger("onnxplug.optimizer")

#: Ops whose first input and output carry the channel axis second (NCHW...).
LAYOUT_SENSITIVE = {
    "": frozenset({"Conv", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"}),
    OWN_DOMAIN: frozenset({"FusedConv"}),
}
NHWC = "NHWC"


#: FusedConv's residual input, channels-last in the twin as the output it is added to.
RESIDUAL_INPUT = 3


def _takes_graph(ask: object) -> bool:
    """Whether a ``preferred_layout`` method takes the graph after the node."""
    try:
        params = list(inspect.signature(ask).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def preferred_layout(provider: ExecutionProvider, node: Node, graph: Graph | None = None) -> str | None:
    """What layout ``provider`` asks for ``node`` of ``graph`` (None: the standard one)."""
    ask = provider.preferred_layout
    try:
        return ask(node, graph) if _takes_graph(ask) else ask(node)  # type: ignore[call-arg]
    except Exception as e:  # a provider's wish must not break optimization
        logger.debug("preferred_layout of %s failed on %s: %s", provider.name, node.describe(), e)
        return None


class LayoutTransform(GraphRewritePass):
    """Rewrite nodes to channels-last where their provider asks for it."""

    level = GraphOptimizationLevel.ORT_ENABLE_LAYOUT
    changes = "nodes a provider wants channels-last -> com.onnxplug.nhwc ops between Transposes"
    order = 10

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        wanted = []  # asked on the graph before any rewrite: answers may depend on neighbours
        for node in list(index.graph.nodes):
            if node.op_type not in LAYOUT_SENSITIVE.get(node.domain, ()):
                continue
            shape = index.shape_of(node.inputs[0])
            if shape is None or len(shape) < 3 or len(node.outputs) != 1:
                continue
            has_residual = node.op_type == "FusedConv" and len(node.inputs) > RESIDUAL_INPUT
            residual = node.inputs[RESIDUAL_INPUT] if has_residual else ""
            if residual and len(index.shape_of(residual) or ()) != len(shape):
                continue  # a residual of another rank cannot be transposed with the data
            provider = context.support.claimant(index.graph, node)
            wish = preferred_layout(provider, node, index.graph) if provider is not None else None
            if wish is None:
                continue
            if wish != NHWC:
                logger.info("provider %s asked layout %r for %s; only NHWC is implemented",
                            provider.name, wish, node.describe())  # type: ignore[union-attr]
                continue
            wanted.append((node, provider, len(shape), residual))
        changed = 0
        for node, provider, rank, residual in wanted:
            inputs = [index.names.fresh(f"{node.inputs[0]}_nhwc"), *node.inputs[1:]]
            if residual:
                inputs[RESIDUAL_INPUT] = index.names.fresh(f"{residual}_nhwc")
            channels_last = fused_node(
                node.op_type, inputs, [index.names.fresh(f"{node.outputs[0]}_nhwc")],
                index.names.fresh(f"{node.name}_nhwc"), dict(node.attributes), domain=NHWC_DOMAIN)
            if not context.support.can_run(provider, index.graph, channels_last):
                continue
            ensure_domain(index.graph, NHWC_DOMAIN)
            to_first = Node("Transpose", [channels_last.outputs[0]], [node.outputs[0]],
                            index.names.fresh(f"{node.name}_to_nchw"),
                            attributes={"perm": make_attribute(channels_first_perm(rank))})
            converted = [(node.inputs[0], inputs[0])] + ([(residual, inputs[RESIDUAL_INPUT])] if residual else [])
            for source, target in converted:
                dtype, shape = index.dtype_of(source), index.shape_of(source)
                if dtype is not None and shape is not None:
                    index.set_type(target, dtype, tuple(shape[p] for p in channels_last_perm(rank)))
                index.insert(Node("Transpose", [source], [target], index.names.fresh(f"{node.name}_to_nhwc"),
                                  attributes={"perm": make_attribute(channels_last_perm(rank))}),
                             near=node, after=False)
            dtype, out_shape = index.dtype_of(node.outputs[0]), index.shape_of(node.outputs[0])
            if dtype is not None and out_shape is not None:
                index.set_type(channels_last.outputs[0], dtype, tuple(out_shape[p] for p in channels_last_perm(rank)))
            index.insert(channels_last, near=node, after=False)
            index.remove(node)
            index.insert(to_first, near=channels_last)
            changed += 1
        return {"nhwc": changed}

