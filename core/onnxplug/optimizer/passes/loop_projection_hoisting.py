"""Hoist a Loop body's per-step input projection out of the loop: one product over the whole
sequence before the Loop instead of one small product per iteration.

A body that reads ``x_t = Gather(X, i, axis=0)`` of an outer sequence and computes
``p = MatMul(x_t, W)`` with an outer 2-D ``W`` reads ``p = Gather(P, i)`` of ``P = MatMul(X, W)``,
computed once before the Loop (the product works on the last axis only, so the two are equal). An
index past the sequence's end still fails in the body's Gather. An outer bias ``b`` added next,
``Add(Add(p, r), b)``, that broadcasts into one step (rank below P's, growing no dimension) is added
to ``P`` before the Loop too, leaving ``Add(p, r)`` in the body; that reassociates the sum, so
results may differ in the last bit.
"""

from __future__ import annotations

from onnxplug.ir import Graph, Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel


def _outer_step(body: Graph, gather: Node, iteration: str) -> tuple[str, Node] | None:
    """(outer sequence, the one node reading the step) for ``gather`` = Gather(sequence, i, axis=0)
    with the sequence from outside the body and its step read once, not returned."""
    if gather.op_type != "Gather" or gather.domain != "" or gather.attr("axis", 0) != 0 \
            or len(gather.inputs) != 2 or gather.inputs[1] != iteration or gather.inputs[0] in body.defined_names():
        return None
    reader = _only_reader(body, gather.outputs[0])
    return None if reader is None else (gather.inputs[0], reader)


def _only_reader(body: Graph, name: str) -> Node | None:
    """The one body node reading ``name`` when nothing else reads it and the body does not return it."""
    readers = [n for n in body.nodes if name in n.inputs or name in n.implicit_inputs]
    if len(readers) != 1 or any(vi.name == name for vi in body.outputs):
        return None
    return readers[0]


def _hoistable(index: GraphIndex, body: Graph, gather: Node, iteration: str) -> Node | None:
    """The MatMul projecting ``gather``'s step of an outer sequence with an outer 2-D weight."""
    found = _outer_step(body, gather, iteration)
    if found is None:
        return None
    (sequence, matmul), step = found, gather.outputs[0]
    if matmul.op_type != "MatMul" or matmul.domain != "" or matmul.inputs[0] != step \
            or matmul.inputs[1] == step or matmul.inputs[1] in body.defined_names():
        return None
    weight = matmul.inputs[1]
    # (ranks and dtypes in the Loop's graph, where both are outer values)
    if index.rank_of(weight) != 2 or (index.rank_of(sequence) or 0) < 2:
        return None
    dtype = index.dtype_of(sequence)
    if dtype is None or dtype.kind != "f" or index.dtype_of(weight) != dtype:
        return None
    return matmul


def _broadcasts_into(shape: tuple | None, target: tuple | None) -> bool:
    """Whether adding a ``shape`` value to a ``target`` value leaves the target's shape as it is."""
    if shape is None or target is None or len(shape) > len(target):
        return False
    return all(d == 1 or (d is not None and d == t) for d, t in zip(reversed(shape), reversed(target)))


def _bias_after_step(index: GraphIndex, body: Graph, gather: Node, iteration: str
                     ) -> tuple[Node, Node, str] | None:
    """(the step's sum, the Add of an outer bias to it, the bias) for ``Add(Add(Gather(P, i), r), b)``,
    P an outer sequence."""
    found = _outer_step(body, gather, iteration)
    if found is None:
        return None
    sequence, total = found
    if total.op_type != "Add" or total.domain != "" or total.inputs[0] == total.inputs[1]:
        return None
    add = _only_reader(body, total.outputs[0])
    if add is None or add.op_type != "Add" or add.domain != "" or total.outputs[0] not in add.inputs:
        return None
    bias = add.inputs[1] if add.inputs[0] == total.outputs[0] else add.inputs[0]
    if bias in body.defined_names() or bias == total.outputs[0]:
        return None
    seq_shape = index.shape_of(sequence)
    dtype = index.dtype_of(sequence)
    if seq_shape is None or dtype is None or dtype.kind != "f" or index.dtype_of(bias) != dtype \
            or not _broadcasts_into(index.shape_of(bias), seq_shape[1:]):
        return None
    return total, add, bias


class LoopProjectionHoisting(GraphRewritePass):
    """Replace a Loop body's MatMul(Gather(X, i), W) by Gather(MatMul(X, W), i) with the product
    computed once before the Loop (X and W outer values, W 2-D); then an outer bias added to the
    step's sum, Add(Add(Gather(P, i), r), b), by Gather(P + b, i) with P + b computed before it."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = ("Loop body MatMul(Gather(X, i), W) -> Gather(MatMul(X, W) before the Loop, i); "
               "Add(Add(Gather(P, i), r), b) -> Add(Gather(P + b before the Loop, i), r)")
    order = 55  # before MatMulAddToGemm turns the projection into a Gemm

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        hoisted = biases = 0
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
            for gather in list(body.nodes):
                found = _bias_after_step(index, body, gather, iteration)
                if found is None:
                    continue
                total, add, bias = found
                sequence = gather.inputs[0]
                biased = index.names.fresh(f"{sequence}_biased")
                index.insert(Node("Add", [sequence, bias], [biased],
                                  name=index.names.fresh(f"{loop.name or 'Loop'}_bias"), opset=add.opset),
                             near=loop, after=False)
                index.set_type(biased, index.dtype_of(sequence), index.shape_of(sequence))  # type: ignore[arg-type]
                gather.inputs[0] = biased
                body.value_info.pop(total.outputs[0], None)
                total.outputs[0] = add.outputs[0]  # the sum now includes the bias: it takes the name
                body.nodes.remove(add)
                index.set_inputs(loop, loop.inputs)
                biases += 1
        return {"hoisted": hoisted, "biases": biases}


PASSES = [LoopProjectionHoisting]
