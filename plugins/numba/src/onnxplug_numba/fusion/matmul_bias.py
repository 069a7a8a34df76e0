"""MatMul -> Add(constant bias over the last axis), run as one kernel: the bias is added to each
band of the product by the thread that computed it, while the band is still in its cache, instead
of in a second pass over the whole result (as transformers' linear layers are exported)."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnxplug_sdk import FusedSubgraph, GraphView, Kernel, KernelContext, Node

from onnxplug_numba.fusion.conv_groups import _constant, _sole_reader
from onnxplug_numba.ops._base import FLOAT_TYPES, matmul, serial_product
from onnxplug_numba.threads import ThreadControl


def _bias_of(view: GraphView, product: Node, add: Node) -> str | None:
    """The Add's other input when it is a constant vector over the product's last axis."""
    out = product.outputs[0]
    if add.opset < 7 or len(add.inputs) != 2 or out not in add.inputs or add.inputs[0] == add.inputs[1]:
        return None
    other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
    value = _constant(view, other)
    b_type = view.type_of(product.inputs[1])
    if value is None or b_type is None or b_type.shape is None or len(b_type.shape) < 2:
        return None
    n = b_type.shape[-1]
    dtype = view.dtype_of(out)
    if not isinstance(n, int) or value.shape not in ((n,), (1, n)) or value.dtype != dtype:
        return None
    a_type = view.type_of(product.inputs[0])
    if a_type is None or a_type.shape is None or len(a_type.shape) < 2 or view.dtype_of(add.outputs[0]) != dtype:
        return None  # 1-D operands change the product's rank: not worth the special cases
    return other


def find_matmul_bias(view: GraphView) -> list[list[Node]]:
    """(MatMul, Add) pairs of float products whose sole reader adds a constant bias vector."""
    offered = {id(n) for n in view.nodes}
    pairs = []
    for node in view.nodes:
        if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx") or len(node.outputs) != 1:
            continue
        if view.dtype_of(node.outputs[0]) not in FLOAT_TYPES or \
                {view.dtype_of(n) for n in node.inputs} != {view.dtype_of(node.outputs[0])}:
            continue
        add = _sole_reader(view, offered, node)
        if add is not None and add.op_type == "Add" and _bias_of(view, node, add) is not None:
            pairs.append([node, add])
            offered -= {id(node), id(add)}
    return pairs


class MatMulBiasKernel(Kernel):
    """MatMul + Add(bias) with the bias added band by band (see the module docstring)."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        product, add = subgraph.nodes
        super().__init__(product, context)
        self.threads: ThreadControl = getattr(context.provider, "threads", None) or \
            ThreadControl(context.intra_op_num_threads)
        bias_name = _bias_of(subgraph.view, product, add)
        if bias_name is None:
            raise ValueError(f"{add.describe()} does not add a constant bias to {product.describe()}")
        self.bias = np.ascontiguousarray(_constant(subgraph.view, bias_name)).reshape(-1)
        self.a_at, self.b_at = (subgraph.inputs.index(n) for n in product.inputs)

    def compute(self, *inputs: Any) -> np.ndarray:
        a, b = inputs[self.a_at], inputs[self.b_at]
        y = serial_product(a, b, self.bias)  # a transformer's projection at a short sequence
        return matmul(a, b, self.threads, bias=self.bias) if y is None else y
