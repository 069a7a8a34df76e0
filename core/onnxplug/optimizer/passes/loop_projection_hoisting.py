"""Hoist a Loop body's per-step input projection out of the loop: one product over the whole
sequence before the Loop instead of one small product per iteration.

Recurrent cells written as ONNX Loops (and RNNs exported that way) read step ``i`` of an outer
sequence and project it with an outer weight::

    body(i, ...):  x_t = Gather(X, i, axis=0);  p = MatMul(x_t, W);  ...

``MatMul(Gather(X, i), W)`` equals ``Gather(MatMul(X, W), i)`` when W is 2-D (the product works on
the last axis only), so the pass computes ``P = MatMul(X, W)`` once before the Loop and the body
reads ``p = Gather(P, i)``. The body runs one kernel fewer per iteration and the per-step products
become one large one, which BLAS runs far closer to peak. An index past the sequence's end still
fails in the body's Gather, as before.
"""

from __future__ import annotations

from onnxplug.ir import Graph, Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


def _hoistable(index: GraphIndex, body: Graph, gather: Node, iteration: str) -> Node | None:
    """The MatMul projecting ``gather``'s step of an outer sequence with an outer 2-D weight."""
    if gather.op_type != "Gather" or gather.domain != "" or gather.attr("axis", 0) != 0 \
            or len(gather.inputs) != 2 or gather.inputs[1] != iteration:
        return None
    defined = body.defined_names()
    sequence, step = gather.inputs[0], gather.outputs[0]
    readers = [n for n in body.nodes if step in n.inputs or step in n.implicit_inputs]
    if sequence in defined or len(readers) != 1 or any(vi.name == step for vi in body.outputs):
        return None
    matmul = readers[0]
    if matmul.op_type != "MatMul" or matmul.domain != "" or matmul.inputs[0] != step \
            or matmul.inputs[1] == step or matmul.inputs[1] in defined:
        return None
    weight = matmul.inputs[1]
    # (ranks and dtypes in the Loop's graph, where both are outer values)
    if index.rank_of(weight) != 2 or (index.rank_of(sequence) or 0) < 2:
        return None
    dtype = index.dtype_of(sequence)
    if dtype is None or dtype.kind != "f" or index.dtype_of(weight) != dtype:
        return None
    return matmul


class LoopProjectionHoisting(GraphRewritePass):
    """Replace a Loop body's MatMul(Gather(X, i), W) by Gather(MatMul(X, W), i) with the product
    computed once before the Loop (X and W outer values, W 2-D)."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Loop body MatMul(Gather(X, i), W) -> Gather(MatMul(X, W) before the Loop, i)"
    order = 55  # before MatMulAddToGemm turns the projection into a Gemm

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        hoisted = 0
        for loop in list(index.graph.nodes):
            if loop.op_type != "Loop" or loop.domain != "" or not loop.inputs or not loop.inputs[0]:
                continue  # without a trip count the loop may stop long before the sequence ends
            body = loop.attr("body")
            if not isinstance(body, Graph) or not body.inputs:
                continue
            iteration = body.inputs[0].name
            for gather in list(body.nodes):
                matmul = _hoistable(index, body, gather, iteration)
                if matmul is None:
                    continue
                sequence, weight = gather.inputs[0], matmul.inputs[1]
                projected = index.names.fresh(f"{matmul.name or 'MatMul'}_hoisted")
                index.insert(Node("MatMul", [sequence, weight], [projected],
                                  name=index.names.fresh(f"{loop.name or 'Loop'}_projection"), opset=matmul.opset),
                             near=loop, after=False)
                seq_shape, w_shape = index.shape_of(sequence), index.shape_of(weight)
                index.set_type(projected, index.dtype_of(sequence),  # type: ignore[arg-type]
                               None if seq_shape is None or w_shape is None else (*seq_shape[:-1], w_shape[-1]))
                body.value_info.pop(gather.outputs[0], None)
                gather.inputs[0] = projected
                gather.outputs[0] = matmul.outputs[0]
                body.nodes.remove(matmul)
                index.set_inputs(loop, loop.inputs)  # re-read the body's outer-scope reads
                hoisted += 1
        return {"hoisted": hoisted}


PASSES = [LoopProjectionHoisting]
