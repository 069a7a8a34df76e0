"""Element types inside subgraphs (If branches, Loop and Scan bodies), worked out by the provider.

onnxplug's loader keeps the types shape inference gives, subgraphs included, but a model that
inference cannot process keeps none, so a provider that checks dtypes before claiming a node
would leave every node of a body to the default provider. :class:`TypedView` adds the element type
of each such value from simple, exact ONNX typing rules (an elementwise op's output has its
input's type, a comparison gives bool, Shape gives int64...), starting from the types that are
known. Ranks and shapes stay unknown, so kernels that need them still decline.

The provider claims with these types and the chain kernel compiles with the same ones; conv
groups are formed from declared types only.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import GraphView, ValueType, elem_type_of, numpy_dtype

#: Ops whose every output has the element type of their first input.
_SAME_AS_FIRST = frozenset("""
Abs Neg Relu Sigmoid Tanh Exp Log Sqrt Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Erf
Floor Ceil Round Reciprocal Softplus Softsign Elu Selu Celu LeakyRelu ThresholdedRelu HardSigmoid
HardSwish Mish Shrink Gelu PRelu Sign Identity Add Sub Mul Div Pow Mod Max Min Sum Mean Clip MatMul
Gemm Transpose Reshape Flatten Squeeze Unsqueeze Concat Gather GatherElements Slice Expand Tile
Split Softmax LogSoftmax Hardmax Conv ConvTranspose ReduceMax ReduceMin ReduceSum ReduceMean
ReduceProd ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp AveragePool
GlobalAveragePool GlobalMaxPool CumSum Pad DepthToSpace SpaceToDepth Trilu LpNormalization
InstanceNormalization
""".split())
#: Ops whose first output (only) has the element type of their first input.
_FIRST_OUTPUT_SAME = frozenset({"MaxPool", "BatchNormalization", "LayerNormalization", "Dropout"})
_BOOL = frozenset({"Less", "Greater", "Equal", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
                   "Not", "IsNaN", "IsInf"})
_INT64 = frozenset({"Shape", "Size", "ArgMax", "ArgMin", "NonZero"})


def infer_element_types(view: GraphView) -> dict[str, np.dtype]:
    """Element types of the graph's node outputs that the graph does not declare."""
    found: dict[str, np.dtype] = {}

    def dtype(name: str) -> np.dtype | None:
        return found.get(name) or view.dtype_of(name)

    for node in view.graph.nodes:  # nodes are in topological order
        if node.domain not in ("", "ai.onnx"):
            continue
        outs = [o for o in node.outputs if o]
        result: dict[str, np.dtype | None] = {}
        op = node.op_type
        first = dtype(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if op in _SAME_AS_FIRST:
            result = {o: first for o in outs}
        elif op in _FIRST_OUTPUT_SAME and node.outputs and node.outputs[0]:
            result = {node.outputs[0]: first}
        elif op in _BOOL:
            result = {o: np.dtype(bool) for o in outs}
        elif op in _INT64:
            result = {o: np.dtype(np.int64) for o in outs}
        elif op == "Where" and len(node.inputs) > 1:
            result = {o: dtype(node.inputs[1]) for o in outs}
        elif op == "CastLike" and len(node.inputs) > 1:
            result = {o: dtype(node.inputs[1]) for o in outs}
        elif op == "Cast" and node.attr("to") is not None:
            try:
                result = {o: np.dtype(numpy_dtype(int(node.attr("to")))) for o in outs}
            except Exception:  # an element type numpy cannot hold (strings, float8...): leave unknown
                result = {}
        for name, t in result.items():
            if t is not None and view.dtype_of(name) is None:
                found[name] = t
    return found


class TypedView(GraphView):
    """A subgraph's view with the element types of :func:`infer_element_types` filled in."""

    def __init__(self, view: GraphView) -> None:
        super().__init__(view.graph, view.nodes)
        self.declared = view
        self._inferred = infer_element_types(view)

    def type_of(self, name: str) -> ValueType | None:
        t = super().type_of(name)
        if t is None and name in self._inferred:
            return ValueType.tensor(elem_type_of(self._inferred[name]), None)
        return t
