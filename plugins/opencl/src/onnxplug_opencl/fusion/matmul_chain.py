"""MatMul followed by Add (bias or residual) and optionally Relu/Clip, as one GEMM with an epilogue.

``MatMul -> Add(bias) [-> Relu]`` is how exported linear layers look; the bias is read in the GEMM's
store instead of a second pass over the product. An Add whose other input has the product's shape
is a residual, also added in the store. A residual that broadcasts is finished elementwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Capability, FusedSubgraph, GraphView, Kernel, KernelContext, Node

from onnxplug_opencl.engine.elementwise import ElementwiseProgram, View
from onnxplug_opencl.engine.gemm import Epilogue
from onnxplug_opencl.engine.packed_matmul import matmul_packed, pack_columns
from onnxplug_opencl.fusion.conv_chain import activation_of, only_reader, tail_program

_PREFIX = "opencl_matmul_chain_"
_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def _bias_of(add: Node, product: str, view: GraphView) -> str:
    """The name of the Add's other input if it is a constant 1-D bias matching the product's last axis."""
    other = add.inputs[1] if add.inputs[0] == product else add.inputs[0]
    value = view.constant(other)
    t = view.type_of(product)
    if value is None or value.ndim != 1 or t is None or t.shape is None or not t.shape:
        return ""
    return other if t.shape[-1] == value.shape[0] else ""


def matmul_chains(provider: Any, view: GraphView, offered: set[int]) -> list[Capability]:
    """Claims for MatMul -> Add [-> Relu | Clip] among the offered nodes."""
    claims = []
    for node in view.nodes:
        if node.op_type != "MatMul" or id(node) not in offered:
            continue
        dtype = view.dtype_of(node.outputs[0])
        if any(view.dtype_of(n) != dtype for n in node.inputs) or dtype not in _TYPES:
            continue
        add = only_reader(view, node.outputs[0], offered)
        if add is None or add.op_type != "Add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1] \
                or any(view.dtype_of(n) != dtype for n in [*add.inputs, add.outputs[0]]):
            continue
        chain = [node, add]
        act = only_reader(view, add.outputs[0], offered)
        if act is not None and act.inputs[0] == add.outputs[0] and view.dtype_of(act.outputs[0]) == dtype \
                and activation_of(act, view) is not None:
            chain.append(act)
        offered.difference_update(id(n) for n in chain)
        claims.append(Capability(tuple(chain), fused=True, name=f"{_PREFIX}{node.name or len(claims)}"))
    return claims


def is_matmul_chain(subgraph: FusedSubgraph) -> bool:
    """Whether a fused subgraph is one of this module's claims."""
    return subgraph.nodes[0].op_type == "MatMul"


class MatMulChainKernel(Kernel):
    """Runs a MatMul chain as one GEMM with bias/residual/activation in the store."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.rt = context.provider.runtime
        self.inputs = list(subgraph.inputs)
        self.matmul, self.add = subgraph.nodes[0], subgraph.nodes[1]
        act = subgraph.nodes[2] if len(subgraph.nodes) > 2 else None
        self.activation = activation_of(act, subgraph.view) if act is not None else None
        product = self.matmul.outputs[0]
        self.bias_name = _bias_of(self.add, product, subgraph.view)
        self.other = self.add.inputs[1] if self.add.inputs[0] == product else self.add.inputs[0]
        self._tail: ElementwiseProgram | None = None
        self.packed_b = pack_columns(self.rt, subgraph.view.constant(self.matmul.inputs[1]))

    def compute(self, *values: Any) -> Any:
        """The chain's output."""
        from onnxplug_opencl.ops.op_matmul import matmul, matmul_shape

        env = dict(zip(self.inputs, values))
        a, b = env[self.matmul.inputs[0]], env[self.matmul.inputs[1]]
        other = env[self.other]
        epi = Epilogue()
        out_shape = matmul_shape(tuple(a.shape), tuple(b.shape))
        if self.bias_name and tuple(other.shape) == (out_shape[-1],):
            epi.bias, epi.bias_sm, epi.bias_sn = other, 0, 1
        elif tuple(other.shape) == out_shape and len(out_shape) >= 2:
            epi.residual = other
        else:  # broadcasting residual: finish Add and activation elementwise
            y = matmul(self.rt, a, b)
            full = tuple(np.broadcast_shapes(tuple(y.shape), tuple(other.shape)))
            out = self.rt.empty(full, y.dtype)
            if self._tail is None:
                self._tail = tail_program(self.rt, np.dtype(y.dtype), self.activation)
            self._tail.run(full, [View.of(y), View.of(other)], [View.of(out)])
            return out
        if self.activation is not None:
            epi.activation, epi.clip = self.activation
        if self.packed_b is not None:
            out = matmul_packed(self.rt, a, self.packed_b, epi)
            if out is not None:
                return out
        return matmul(self.rt, a, b, epilogue=epi)
