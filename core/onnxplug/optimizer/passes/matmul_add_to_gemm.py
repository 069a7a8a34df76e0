"""MatMul + Add -> Gemm, for 2-D MatMuls whose added term broadcasts onto the [M, N] result."""

from __future__ import annotations

from onnxplug.ir import Node
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.optimizer.shapes import same_dim
from onnxplug.options import GraphOptimizationLevel

#: Gemm's float types (integer Gemm exists from opset 11 but few kernels take it).
_GEMM_KINDS = "f"


def _broadcasts_onto(index: GraphIndex, term: str, result: str) -> bool:
    shape, out = index.shape_of(term), index.shape_of(result)
    if shape is None or out is None or len(out) != 2 or len(shape) > 2:
        return False
    tail = out[2 - len(shape):]
    return all(d == 1 or same_dim(d, o) for d, o in zip(shape, tail))


class MatMulAddToGemm(GraphRewritePass):
    """Replace MatMul(A, B) -> Add(., C) by Gemm(A, B, C) when A and B are 2-D."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "2-D MatMul + Add replaced by Gemm"
    order = 60

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        fused = 0
        for add in list(index.graph.nodes):
            if add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2:
                continue
            for side in (0, 1):
                matmul = index.producer_of(add.inputs[side], "MatMul")
                if matmul is None or not self._fits(index, matmul, add, add.inputs[1 - side]):
                    continue
                gemm = Node("Gemm", [*matmul.inputs, add.inputs[1 - side]], [add.outputs[0]],
                            name=index.names.fresh(f"{matmul.name}_gemm"), opset=add.opset)
                index.remove(matmul)
                index.insert(gemm, near=add)
                index.remove(add)
                fused += 1
                break
        return {"fused": fused}

    @staticmethod
    def _fits(index: GraphIndex, matmul: Node, add: Node, term: str) -> bool:
        if add.opset < 7 or not index.private(matmul.outputs[0], add):  # Gemm broadcasts C from 7
            return False
        if index.rank_of(matmul.inputs[0]) != 2 or index.rank_of(matmul.inputs[1]) != 2:
            return False
        dtype = index.dtype_of(matmul.inputs[0])
        if dtype is None or dtype.kind not in _GEMM_KINDS or index.dtype_of(term) != dtype:
            return False
        return _broadcasts_onto(index, term, matmul.outputs[0])


PASSES = [MatMulAddToGemm]
