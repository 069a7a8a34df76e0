"""Multi-head attention fusion: the exported spelling

    Q, K, V [B, S, H*Dh] -> Reshape [B, S, H, Dh] -> Transpose (K to [B, H, Dh, L], Q/V to [B, H, S, Dh])
    -> MatMul(Q, K) -> Mul/Div by a scale -> Add(mask) -> Softmax(last axis) -> MatMul(., V)
    -> Transpose [B, S, H, Dh] -> Reshape [B, S, H*Dh]

becomes com.onnxplug MultiHeadAttention(Q, K, V, mask) with ``num_heads`` and ``scale``. The
Q/K/V projections (MatMul + Add) stay ordinary nodes. Scale and mask are optional; the mask is
any additive tensor of rank 4 or less. The head splits' targets may be constants with 0 and -1
([0, 0, -1, Dh]) or computed, when shape inference gives their output's head count and size; a
merging Reshape with a computed target stays, reading the fused output. Exports leave batch and
sequence dims unknown, so operands that broadcast are the kernels' to handle (``attention_broadcast``).
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
    if shape is None or len(shape) != 3:
        return None
    if target is not None:
        dims = reshape_dims(shape, target, int(reshape.attr("allowzero", 0))) if target.size == 4 else None
    else:  # a computed target: what shape inference made of the split
        inferred = index.shape_of(reshape.outputs[0])
        dims = list(inferred) if inferred is not None and len(inferred) == 4 else None
    width = shape[2]
    if dims is None or not isinstance(width, int):
        return None
    heads, head_size = dims[2], dims[3]
    # exporters write the head count or the head size as -1 ([0, 0, -1, Dh]): the width decides it
    if heads is None and isinstance(head_size, int) and head_size > 0 and width % head_size == 0:
        heads = width // head_size
    if head_size is None and isinstance(heads, int) and heads > 0 and width % heads == 0:
        head_size = width // heads
    if not isinstance(heads, int) or not isinstance(head_size, int) or heads <= 0 or head_size <= 0:
        return None
    lead = list(dims[:2])
    if width == heads * head_size:  # then the leading dims hold B*S elements: a -1 among them is the source's
        if lead[0] is None and same_dim(lead[1], shape[1]):
            lead[0] = shape[0]
        if lead[1] is None and same_dim(lead[0], shape[0]):
            lead[1] = shape[1]
    if not same_shape(lead, shape[:2]) or width != heads * head_size:
        return None
    return _Heads(source, heads, head_size, [transpose, reshape])


def _mask_may_fit(mask_shape: tuple[Dim, ...], scores: list[Dim]) -> bool:
    """Whether a mask of this shape is not known to change the [B, H, S, L] scores' shape."""
    if len(mask_shape) > 4:
        return False
    tail = scores[4 - len(mask_shape):]
    return not any(isinstance(d, int) and isinstance(s, int) and d not in (1, s) for d, s in zip(mask_shape, tail))


def _merges_heads(index: GraphIndex, merge: Node, heads_shape: list[Dim], merged: list[Dim]) -> bool:
    """Whether Reshape ``merge`` turns [B, S, H, Dv] into [B, S, H*Dv] by a constant target."""
    target = index.constant(merge.inputs[1])
    if target is None:
        return False
    out = reshape_dims(heads_shape, target, int(merge.attr("allowzero", 0)))
    if out is None or len(out) != 3 or not same_shape(out[:2], merged[:2]):
        return False
    return out[2] is None or same_dim(out[2], merged[2])  # a -1 there: the element count decides it


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
            inputs, output, nodes, heads, scale, anchor, kept = match
            name = index.names.fresh(f"{softmax.name}_mha")
            if output is None:
                output = index.names.fresh(f"{name}_output")
            node = fused_node(MULTI_HEAD_ATTENTION, inputs, [output], name, {"num_heads": heads, "scale": scale})
            if not context.support.allows(index.graph, [anchor, *nodes], node):
                continue
            ensure_domain(index.graph)
            index.insert(node, near=nodes[-1])
            index.remove(*nodes)
            if kept is not None:
                merge, shape = kept
                index.set_type(output, index.dtype_of(inputs[0]), tuple(shape))  # type: ignore[arg-type]
                index.set_input(merge, 0, output)
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
        q_shape, k_shape = index.shape_of(q.source), index.shape_of(k.source)
        if merge is None or merge.op_type != "Reshape" or merge.domain != "" or q_shape is None or k_shape is None:
            return None
        # Batch and length agreement and the mask's fit are not proven here (exports leave those
        # dims unknown): the kernels compute other shapes as these nodes would (attention_broadcast)
        # (a mask of unknown rank: one above 4 fails the unfused nodes' Transpose and the kernels alike)
        mask_shape = index.shape_of(mask) if mask else ()
        if mask_shape is not None and not _mask_may_fit(mask_shape, [q_shape[0], q.heads, q_shape[1], k_shape[1]]):
            return None
        nodes += [qk, *q.nodes, *k.nodes, context, *v.nodes, merge_t]  # type: ignore[list-item]
        inputs = [q.source, k.source, v.source] + ([mask] if mask else [])
        merged: list[Dim] = [q_shape[0], q_shape[1], v.heads * v.head_size]
        if _merges_heads(index, merge, [q_shape[0], q_shape[1], v.heads, v.head_size], merged):
            return inputs, merge.outputs[0], nodes + [merge], q.heads, float(scale), qk, None
        heads_shape = index.shape_of(merge_t.outputs[0])
        if heads_shape is not None and len(heads_shape) == 4:  # what shape inference saw: B, S may be broadcast ones
            merged = [heads_shape[0], heads_shape[1], v.heads * v.head_size]
        # a computed target (Concat of Shape dims): the Reshape stays, reading the fused output
        # [B, S, H*Dv], whose elements are in the order of the [B, S, H, Dv] it read before
        return inputs, None, nodes, q.heads, float(scale), qk, (merge, merged)


PASSES = [AttentionFusion]
