"""Conv followed by BatchNormalization, Add and Relu/Clip, as one convolution with a GEMM epilogue.

``Conv -> BatchNormalization -> Add(residual) -> Relu`` (a ResNet block's tail) becomes one im2col
and one GEMM whose store applies bias, residual and activation: BatchNormalization with constant
statistics is folded into the weights and bias once, at session creation. Each link is optional,
but a group has at least two nodes, and every intermediate value has exactly one reader.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxplug_sdk import Capability, FusedSubgraph, GraphView, Kernel, KernelContext, Node

from onnxplug_opencl.engine.conv import cached_geometry, conv2d, pack_weights
from onnxplug_opencl.engine.gemm import Epilogue
from onnxplug_opencl.engine.dtypes import c_type
from onnxplug_opencl.engine.elementwise import Body, ElementwiseProgram, View
from onnxplug_opencl.engine.expressions import literal

_PREFIX = "opencl_conv_chain_"


@dataclass
class Chain:
    """The nodes of one group, by role."""

    conv: Node
    bn: Node | None = None
    add: Node | None = None
    act: Node | None = None

    @property
    def nodes(self) -> list[Node]:
        return [n for n in (self.conv, self.bn, self.add, self.act) if n is not None]


def only_reader(view: GraphView, value: str, offered: set[int]) -> Node | None:
    readers = view.consumers(value)
    if len(readers) != 1 or value in view.graph_outputs or id(readers[0]) not in offered:
        return None
    return readers[0]


def _constant(view: GraphView, name: str) -> np.ndarray | None:
    return view.constant(name) if name else None


def activation_of(node: Node, view: GraphView) -> tuple[str, tuple[float, float]] | None:
    if node.op_type == "Relu":
        return "relu", (0.0, math.inf)
    if node.op_type != "Clip":
        return None
    if node.opset < 11:
        return "clip", (float(node.attr("min", -math.inf)), float(node.attr("max", math.inf)))
    bounds = []
    for i, default in ((1, -math.inf), (2, math.inf)):
        name = node.inputs[i] if len(node.inputs) > i else ""
        if not name:
            bounds.append(default)
            continue
        value = _constant(view, name)
        if value is None or value.size != 1:
            return None
        bounds.append(float(value.reshape(-1)[0]))
    return "clip", (bounds[0], bounds[1])


def _bn_foldable(conv: Node, bn: Node, view: GraphView) -> bool:
    if int(bn.attr("training_mode", 0)) or len([o for o in bn.outputs if o]) != 1:
        return False
    if _constant(view, conv.inputs[1]) is None:
        return False
    if len(conv.inputs) > 2 and conv.inputs[2] and _constant(view, conv.inputs[2]) is None:
        return False
    return all(_constant(view, n) is not None for n in bn.inputs[1:5])


def find_chain(conv: Node, view: GraphView, offered: set[int]) -> Chain | None:
    """The longest Conv[->BN][->Add][->Relu|Clip] chain starting at ``conv``, if at least two nodes."""
    from onnxplug_opencl.ops.op_conv import conv_supported

    if not conv_supported(conv, view):
        return None
    chain = Chain(conv)
    dtype = view.dtype_of(conv.outputs[0])
    tail = conv.outputs[0]
    nxt = only_reader(view, tail, offered)
    if nxt is not None and nxt.op_type == "BatchNormalization" and nxt.inputs[0] == tail \
            and _bn_foldable(conv, nxt, view):
        chain.bn, tail = nxt, nxt.outputs[0]
        nxt = only_reader(view, tail, offered)
    if nxt is not None and nxt.op_type == "Add" and len(nxt.inputs) == 2 and nxt.inputs[0] != nxt.inputs[1] \
            and all(view.dtype_of(n) == dtype for n in [*nxt.inputs, nxt.outputs[0]]):
        chain.add, tail = nxt, nxt.outputs[0]
        nxt = only_reader(view, tail, offered)
    if nxt is not None and view.dtype_of(nxt.outputs[0]) == dtype and nxt.inputs[0] == tail \
            and activation_of(nxt, view) is not None:
        chain.act = nxt
    return chain if len(chain.nodes) >= 2 else None


def conv_chains(provider: Any, view: GraphView) -> list[Capability]:
    """Claims for every Conv chain among the offered nodes."""
    offered = {id(n) for n in view.nodes}
    claims, taken = [], set()
    for node in view.nodes:
        if node.op_type != "Conv" or id(node) in taken:
            continue
        chain = find_chain(node, view, offered - taken)
        if chain is None:
            continue
        taken.update(id(n) for n in chain.nodes)
        claims.append(Capability(tuple(chain.nodes), fused=True, name=f"{_PREFIX}{node.name or len(claims)}"))
    return claims


def is_conv_chain(subgraph: FusedSubgraph) -> bool:
    """Whether a fused subgraph is one of this module's claims."""
    return subgraph.nodes[0].op_type == "Conv"


def fold_batchnorm(w: np.ndarray, b: np.ndarray | None, bn: Node, view: GraphView) -> tuple[np.ndarray, np.ndarray]:
    """Weights and bias of the convolution with the BatchNormalization applied."""
    scale, beta, mean, var = (view.constant(n).astype(np.float64) for n in bn.inputs[1:5])  # type: ignore[union-attr]
    factor = scale / np.sqrt(var + float(bn.attr("epsilon", 1e-5)))
    w2 = w.astype(np.float64) * factor.reshape((-1,) + (1,) * (w.ndim - 1))
    b0 = b.astype(np.float64) if b is not None else np.zeros(w.shape[0])
    return w2.astype(w.dtype), ((b0 - mean) * factor + beta).astype(w.dtype)


class ConvChainKernel(Kernel):
    """Runs a Conv chain as one convolution with a fused epilogue."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.rt = context.provider.runtime
        self.inputs = list(subgraph.inputs)
        owner = subgraph.view
        by_type = {n.op_type: n for n in subgraph.nodes}
        conv = subgraph.nodes[0]
        act = next((n for n in subgraph.nodes[1:] if n.op_type in ("Relu", "Clip")), None)
        self.chain = Chain(conv, by_type.get("BatchNormalization"), by_type.get("Add"), act)
        self.folded: tuple[Any, Any] | None = None
        weights = owner.constant(conv.inputs[1])
        if self.chain.bn is not None:
            b = owner.constant(conv.inputs[2]) if len(conv.inputs) > 2 and conv.inputs[2] else None
            weights, b2 = fold_batchnorm(weights, b, self.chain.bn, owner)  # type: ignore[arg-type]
            self.folded = (self.rt.to_device(weights), self.rt.to_device(b2))
        group = int(conv.attr("group", 1))
        self.packed = pack_weights(self.rt, weights, group) if weights is not None else None
        self.activation = activation_of(act, owner) if act is not None else None
        tail = self.chain.bn.outputs[0] if self.chain.bn is not None else conv.outputs[0]
        self.residual_name = ""
        if self.chain.add is not None:
            self.residual_name = next(n for n in self.chain.add.inputs if n != tail)
        self._tail_kernel: ElementwiseProgram | None = None
        self._geometries: dict[Any, Any] = {}

    def compute(self, *values: Any) -> Any:
        """The chain's output."""
        env = dict(zip(self.inputs, values))
        conv = self.chain.conv
        x = env[conv.inputs[0]]
        if self.folded is not None:
            w, b = self.folded
        else:
            w = env[conv.inputs[1]]
            b = env[conv.inputs[2]] if len(conv.inputs) > 2 and conv.inputs[2] else None
        geo = cached_geometry(self._geometries, conv, x.shape, w.shape)
        epi = Epilogue(bias=b)
        residual = env[self.residual_name] if self.residual_name else None
        spatial = [int(d) for d in x.shape[2:]]
        oh, ow = geo.output_hw(*spatial) if len(spatial) == 2 else geo.output_hw(1, spatial[0])
        out_shape = (int(x.shape[0]), int(w.shape[0])) + ((oh, ow) if len(spatial) == 2 else (ow,))
        if residual is None or tuple(residual.shape) == out_shape:
            epi.residual = residual
            if self.activation is not None:
                epi.activation, epi.clip = self.activation
            return conv2d(self.rt, x, w, geo, epi, packed=self.packed)
        # The residual broadcasts instead of matching: Add and the activation run elementwise.
        y = conv2d(self.rt, x, w, geo, epi, packed=self.packed)
        full = tuple(np.broadcast_shapes(out_shape, tuple(residual.shape)))
        out = self.rt.empty(full, y.dtype)
        self._tail_program(np.dtype(y.dtype)).run(full, [View.of(y), View.of(residual)], [View.of(out)])
        return out

    def _tail_program(self, dtype: np.dtype) -> ElementwiseProgram:
        if self._tail_kernel is None:
            self._tail_kernel = tail_program(self.rt, dtype, self.activation)
        return self._tail_kernel


def tail_program(runtime: Any, dtype: np.dtype, activation: tuple[str, tuple[float, float]] | None
                 ) -> ElementwiseProgram:
    """``act(x0 + x1)`` with broadcasting: the Add and activation of a chain whose residual
    broadcasts instead of matching the product's shape."""
    t = c_type(dtype)
    expr = "x0 + x1"
    if activation is not None:
        kind, (lo, hi) = activation
        expr = f"fmax({expr}, ({t})0)" if kind == "relu" else \
            f"fmin(fmax({expr}, {literal(lo, dtype)}), {literal(hi, dtype)})"
    return ElementwiseProgram(runtime, "chain_tail", Body((dtype, dtype), (dtype,), (f"const {t} y0 = {expr};",)))


__all__ = ["ConvChainKernel", "activation_of", "conv_chains", "is_conv_chain", "only_reader", "tail_program"]
