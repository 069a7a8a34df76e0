"""Conv + BatchNormalization folding: inference BN after a Conv is folded into the Conv's
weights and bias (W' = W * s, B' = (B - mean) * s + beta with s = gamma / sqrt(var + eps))."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


_NATIVE_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def conv_params(index: GraphIndex, conv: Node) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(W, B) of a Conv whose weight (and bias, if any) are constants; None otherwise."""
    if conv.op_type != "Conv" or conv.domain != "" or len(conv.inputs) < 2:
        return None
    weight = index.constant(conv.inputs[1])
    if weight is None or weight.dtype.kind != "f" or weight.ndim < 3:
        return None
    bias = None
    if len(conv.inputs) > 2 and conv.inputs[2]:
        bias = index.constant(conv.inputs[2])
        if bias is None:
            return None
    return weight, bias


def set_conv_params(index: GraphIndex, conv: Node, weight: np.ndarray | None, bias: np.ndarray) -> None:
    """Give a Conv new (fresh-named) weight and bias initializers, as the old ones may be shared;
    ``weight=None`` keeps the weight."""
    inputs = list(conv.inputs[:2])
    if weight is not None:
        inputs[1] = index.add_initializer(f"{conv.inputs[1]}_fused", weight)
    inputs.append(index.add_initializer(f"{conv.inputs[1]}_bias_fused", bias))
    index.set_inputs(conv, inputs)


class ConvBatchNormFusion(GraphRewritePass):
    """Fold inference-mode BatchNormalization into the Conv before it."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "BatchNormalization after Conv folded into the Conv weights"
    order = 40

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        fused = 0
        for bn in list(index.graph.nodes):
            if bn.op_type != "BatchNormalization" or bn.domain != "" or not self._inference(index, bn):
                continue
            conv = index.producer.get(bn.inputs[0])
            params = conv_params(index, conv) if conv is not None else None
            stats = [index.constant(n) for n in bn.inputs[1:5]]
            if params is None or any(s is None for s in stats) or not index.private(bn.inputs[0], bn):
                continue
            weight, bias = params
            gamma, beta, mean, var = (np.asarray(s, np.float64).reshape(-1) for s in stats)
            if not gamma.size == beta.size == mean.size == var.size == weight.shape[0]:
                continue
            scale = gamma / np.sqrt(var + float(bn.attr("epsilon", 1e-5)))
            old_bias = np.zeros(weight.shape[0]) if bias is None else bias.astype(np.float64)
            column = scale.reshape(-1, *[1] * (weight.ndim - 1))
            if weight.dtype in _NATIVE_FLOATS:
                # computed in float64 and rounded once to the weight's dtype, without float64 copies
                # of the whole weight: the same values as the general line below
                new_w = np.empty_like(weight)
                np.multiply(weight, column, out=new_w, dtype=np.float64, casting="unsafe")
            else:
                new_w = (weight.astype(np.float64) * column).astype(weight.dtype)
            new_b = ((old_bias - mean) * scale + beta).astype(weight.dtype)
            set_conv_params(index, conv, new_w, new_b)
            index.absorb(conv, [bn], bn.outputs[0])
            fused += 1
        return {"fused": fused}

    @staticmethod
    def _inference(index: GraphIndex, bn: Node) -> bool:
        if int(bn.attr("training_mode", 0)) or int(bn.attr("spatial", 1)) == 0 or len(bn.inputs) < 5:
            return False
        return not any(o and index.is_used(o) for o in bn.outputs[1:])


PASSES = [ConvBatchNormFusion]
