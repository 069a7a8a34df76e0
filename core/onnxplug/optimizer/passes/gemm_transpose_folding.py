"""Gemm transpose folding: a 2-D Transpose feeding Gemm's A or B becomes the ``transA``/``transB`` flag."""

from __future__ import annotations

from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute
from onnxplug.options import GraphOptimizationLevel


class GemmTransposeFolding(GraphRewritePass):
    """Read Transpose(perm=[1, 0]) inputs of Gemm directly and flip the matching trans flag."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "Transpose before Gemm folded into transA/transB"
    order = 50

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        folded = 0
        for gemm in list(index.graph.nodes):
            if gemm.op_type != "Gemm" or gemm.domain != "":
                continue
            for position, flag in ((0, "transA"), (1, "transB")):
                transpose = index.producer_of(gemm.inputs[position], "Transpose")
                if transpose is None or list(transpose.attr("perm", [1, 0])) != [1, 0]:
                    continue
                if index.rank_of(transpose.inputs[0]) != 2:
                    continue
                gemm.attributes[flag] = make_attribute(1 - int(gemm.attr(flag, 0)))
                index.set_input(gemm, position, transpose.inputs[0])
                folded += 1
        return {"folded": folded}


PASSES = [GemmTransposeFolding]
