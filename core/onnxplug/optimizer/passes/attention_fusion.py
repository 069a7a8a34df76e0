"""Multi-head attention fusion: the exported spelling

    Q, K, V [B, S, H*Dh] -> Reshape [B, S, H, Dh] -> Transpose (K to [B, H, Dh, L], Q/V to [B, H, S, Dh])
    -> MatMul(Q, K) -> Mul/Div by a scale -> Add(mask) -> Softmax(last axis) -> MatMul(., V)
    -> Transpose [B, S, H, Dh] -> Reshape [B, S, H*Dh]

becomes com.onnxplug MultiHeadAttention(Q, K, V, mask) with ``num_heads`` and ``scale``. The
Q/K/V projections (MatMul + Add) stay ordinary nodes. Scale and mask are optional; the mask is
any additive tensor that broadcasts onto the [B, H, S, L] scores without enlarging them.
"""

from __future__ import annotations

from dataclasses import dataclass

from onnxplug.ir import Node
from onnxplug.ir.types import Dim
from onnxplug.optimizer.fused_ops import MULTI_HEAD_ATTENTION, ensure_domain, fused_node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.passes.gelu_fusion import with_scalar
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import reshape_dims, same_dim, same_shape
from onnxplug.options import GraphOptimizationLevel

_TO_HEADS = [0, 2, 1, 3]
_K_TO_HEADS = [0, 2, 3, 1]


@dataclass
class _Heads:
    """One of Q/K/V split into heads: the [B, S, D] source, heads, head size and nodes used."""

    source: str
    heads: int
    head_size: int
    nodes: list[Node]


def _split_heads(index: GraphIndex, name: str, perm: list[int], reader: Node) -> _Heads | None:
    transpose = index.producer_of(name, "Transpose")
    if transpose is None or list(transpose.attr("perm", [])) != perm or not index.private(name, reader):
        return None
    reshape = index.producer_of(transpose.inputs[0], "Reshape")
    if reshape is None or not index.private(transpose.inputs[0], transpose):
        return None
    source, target = reshape.inputs[0], index.constant(reshape.inputs[1])
    shape = index.shape_of(source)
    if target is None or shape is None or len(shape) != 3 or target.size != 4:
        return None
    heads, head_size = int(target.reshape(-1)[2]), int(target.reshape(-1)[3])
    dims = reshape_dims(shape, target, int(reshape.attr("allowzero", 0)))
    expected = [shape[0], shape[1], heads, head_size]
    if heads <= 0 or head_size <= 0 or not same_shape(dims, expected):
        return None
    if not isinstance(shape[2], int) or shape[2] != heads * head_size:
        return None
    return _Heads(source, heads, head_size, [transpose, reshape])


def _mask_fits(mask_shape: tuple[Dim, ...] | None, scores: list[Dim]) -> bool:
    if mask_shape is None or len(mask_shape) > 4:
        return False
    tail = scores[4 - len(mask_shape):]
    return all(d == 1 or same_dim(d, s) for d, s in zip(mask_shape, tail))


class AttentionFusion(GraphRewritePass):
    """Fuse scaled dot-product multi-head attention into one node."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = ("multi-head attention (MatMul/scale/mask/Softmax/MatMul + head reshapes) "
               "-> com.onnxplug.MultiHeadAttention")
    order = 70

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        fused = 0
        for softmax in list(index.graph.nodes):
            if softmax.op_type != "Softmax" or softmax.domain != "":
                continue
            if not any(n is softmax for n in index.graph.nodes):
                continue
            match = self._match(index, softmax)
            if match is None:
                continue
            inputs, output, nodes, heads, scale, anchor = match
            node = fused_node(MULTI_HEAD_ATTENTION, inputs, [output], index.names.fresh(f"{softmax.name}_mha"),
                              {"num_heads": heads, "scale": scale})
            if not context.support.allows(index.graph, [anchor, *nodes], node):
                continue
            ensure_domain(index.graph)
            index.insert(node, near=nodes[-1])
            index.remove(*nodes)
            fused += 1
        return {"fused": fused}

    @staticmethod
    def _match(index: GraphIndex, softmax: Node) -> tuple | None:
        if int(softmax.attr("axis", -1 if softmax.opset >= 13 else 1)) not in (-1, 3):
            return None
        nodes: list[Node] = [softmax]
        value = softmax.inputs[0]
        mask = ""
        node = index.producer.get(value)
        if node is not None and node.op_type == "Add" and node.domain == "" and index.private(value, softmax):
            for side in (0, 1):
                inner = index.producer.get(node.inputs[side])
                if inner is not None and inner.op_type in ("Mul", "Div", "MatMul"):
                    mask, value = node.inputs[1 - side], node.inputs[side]
                    nodes.append(node)
                    break
        scale = 1.0
        node = index.producer.get(value)
        scaling = with_scalar(index, node, "Mul") or with_scalar(index, node, "Div")
        if node is not None and scaling is not None and index.private(value, nodes[-1]):
            scale = scaling[1] if node.op_type == "Mul" else 1.0 / scaling[1]
            nodes.append(node)
            value = scaling[0]
        qk = index.producer_of(value, "MatMul")
        if qk is None or not index.private(value, nodes[-1]):
            return None
        q = _split_heads(index, qk.inputs[0], _TO_HEADS, qk)
        k = _split_heads(index, qk.inputs[1], _K_TO_HEADS, qk)
        context = index.only_consumer(softmax.outputs[0])
        if q is None or k is None or context is None or context.op_type != "MatMul":
            return None
        if context.inputs[0] != softmax.outputs[0]:
            return None
        v = _split_heads(index, context.inputs[1], _TO_HEADS, context)
        if v is None or not q.heads == k.heads == v.heads or q.head_size != k.head_size:
            return None
        merge_t = index.only_consumer(context.outputs[0])
        if merge_t is None or merge_t.op_type != "Transpose" or list(merge_t.attr("perm", [])) != _TO_HEADS:
            return None
        merge = index.only_consumer(merge_t.outputs[0])
        target = index.constant(merge.inputs[1]) if merge is not None and merge.op_type == "Reshape" else None
        q_shape, k_shape = index.shape_of(q.source), index.shape_of(k.source)
        if target is None or q_shape is None or k_shape is None:
            return None
        if not same_shape(k_shape, index.shape_of(v.source)):
            return None
        merged_in = [q_shape[0], q_shape[1], v.heads, v.head_size]
        out = reshape_dims(merged_in, target, int(merge.attr("allowzero", 0)))  # type: ignore[union-attr]
        if not same_shape(out, [q_shape[0], q_shape[1], v.heads * v.head_size]):
            return None
        if not same_dim(q_shape[0], k_shape[0]):
            return None
        if mask and not _mask_fits(index.shape_of(mask), [q_shape[0], q.heads, q_shape[1], k_shape[1]]):
            return None
        nodes += [qk, *q.nodes, *k.nodes, context, *v.nodes, merge_t, merge]  # type: ignore[list-item]
        inputs = [q.source, k.source, v.source] + ([mask] if mask else [])
        return inputs, merge.outputs[0], nodes, q.heads, float(scale), qk  # type: ignore[union-attr]


PASSES = [AttentionFusion]
