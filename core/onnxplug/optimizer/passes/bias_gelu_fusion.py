"""Bias + GELU fusion: ``Gelu(x + bias)`` with a constant 1-D bias over the last axis ->
com.onnxplug BiasGelu(x, bias), the pattern after every MatMul of a transformer's feed-forward."""

from __future__ import annotations

from onnxplug.optimizer.fused_ops import BIAS_GELU, GELU, OWN_DOMAIN, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


class BiasGeluFusion(GraphRewritePass):
    """Fold the Add of a bias vector into the Gelu after it."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "Add(bias) + Gelu -> com.onnxplug.BiasGelu"
    order = 40

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        fused = 0
        for gelu in list(index.graph.nodes):
            if gelu.op_type != GELU or gelu.domain != OWN_DOMAIN:
                continue
            add = index.producer_of(gelu.inputs[0], "Add")
            if add is None or not index.private(add.outputs[0], gelu):
                continue
            for side in (0, 1):
                x, bias_name = add.inputs[side], add.inputs[1 - side]
                bias, shape = index.constant(bias_name), index.shape_of(x)
                if bias is None or bias.ndim != 1 or not shape or shape[-1] != bias.size:
                    continue
                if index.dtype_of(x) != bias.dtype:
                    continue
                node = fused_node(BIAS_GELU, [x, bias_name], list(gelu.outputs),
                                  index.names.fresh(f"{gelu.name}_bias"), dict(gelu.attributes))
                if not context.support.allows(index.graph, [gelu, add], node):
                    break
                index.insert(node, near=gelu)
                index.remove(add, gelu)
                fused += 1
                break
        return {"fused": fused}


PASSES = [BiasGeluFusion]
