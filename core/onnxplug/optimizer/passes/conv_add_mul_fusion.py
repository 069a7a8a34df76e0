"""Conv + Add / Mul folding: a per-channel (or scalar) constant added to or multiplying a Conv's
output is folded into the Conv's bias, or its weights and bias."""

from __future__ import annotations

import numpy as np

from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.conv_bn_fusion import conv_params, set_conv_params
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


def per_channel(value: np.ndarray, rank: int, channels: int) -> np.ndarray | None:
    """``value`` as a [channels] vector if it broadcasts against [N, C, ...] only along C."""
    if value.ndim > rank:
        return None
    shape = (1,) * (rank - value.ndim) + value.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(value.reshape(-1), (channels,)).astype(np.float64)


class ConvAddMulFusion(GraphRewritePass):
    """Fold Conv -> Add(constant) into the bias and Conv -> Mul(constant) into weights and bias."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "per-channel Add/Mul after Conv folded into the Conv"
    order = 41

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        counts = {"Add": 0, "Mul": 0}
        for node in list(index.graph.nodes):
            if node.op_type not in counts or node.domain != "" or len(node.inputs) != 2:
                continue
            for side in (0, 1):
                conv = index.producer.get(node.inputs[side])
                params = conv_params(index, conv) if conv is not None else None
                constant = index.constant(node.inputs[1 - side])
                if params is None or constant is None or not index.private(node.inputs[side], node):
                    continue
                weight, bias = params
                if constant.dtype != weight.dtype:
                    continue
                vector = per_channel(constant, weight.ndim, weight.shape[0])
                if vector is None:
                    continue
                old_bias = np.zeros(weight.shape[0]) if bias is None else bias.astype(np.float64)
                if node.op_type == "Add":
                    new_w, new_b = None, old_bias + vector
                else:
                    scaled = weight.astype(np.float64) * vector.reshape(-1, *[1] * (weight.ndim - 1))
                    new_w, new_b = scaled.astype(weight.dtype), old_bias * vector
                set_conv_params(index, conv, new_w, new_b.astype(weight.dtype))
                index.absorb(conv, [node], node.outputs[0])
                counts[node.op_type] += 1
                break
        return counts


PASSES = [ConvAddMulFusion]
