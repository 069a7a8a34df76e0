"""Conv groups: Conv -> [BatchNormalization] -> [Add residual] -> [activation], run as one kernel.

BatchNormalization's constants are folded into the weights and bias when the group is compiled;
the residual and the activation run in the conv's compiled epilogue. Every value inside a group
has exactly one reader (the next member) and is not a graph output, so a group is convex.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnxplug_sdk import FusedSubgraph, GraphView, Kernel, KernelContext, Node

from onnxplug_numba.ops._conv import ConvCall, ConvSpec, activation_of, conv, kept_conv, want_kernels

_ACTIVATIONS = ("Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Clip")


def _sole_reader(view: GraphView, offered: set[int], node: Node) -> Node | None:
    out = node.outputs[0]
    if out in view.graph_outputs:
        return None
    readers = view.consumers(out)
    if len(readers) != 1 or id(readers[0]) not in offered or readers[0].domain not in ("", "ai.onnx"):
        return None
    return readers[0]


def _constant(view: GraphView, name: str) -> np.ndarray | None:
    if not name:
        return None
    value = view.constant(name)
    if value is None:
        producer = view.producer(name)
        if producer is not None and producer.op_type == "Constant":
            value = producer.attr("value")
    return None if value is None else np.asarray(value)


def _batch_norm_ok(view: GraphView, bn: Node) -> bool:
    if bn.opset < 9 or len([o for o in bn.outputs if o]) != 1 or bn.attr("training_mode", 0):
        return False
    return all(_constant(view, n) is not None for n in bn.inputs[1:5])


def _clip_bounds(view: GraphView, clip: Node) -> dict[str, float] | None:
    if clip.opset < 11:
        return {"min": float(clip.attr("min", -np.inf)), "max": float(clip.attr("max", np.inf))}
    bounds: dict[str, float] = {}
    for key, index in (("min", 1), ("max", 2)):
        name = clip.inputs[index] if len(clip.inputs) > index else ""
        if name:
            value = _constant(view, name)
            if value is None or value.size != 1:
                return None
            bounds[key] = float(value.reshape(-1)[0])
    return bounds


def _same_known_shape(view: GraphView, a: str, b: str) -> bool:
    ta, tb = view.type_of(a), view.type_of(b)
    if ta is None or tb is None or ta.shape is None or tb.shape is None:
        return False
    return ta.shape == tb.shape and all(d is not None for d in ta.shape) and ta.dtype == tb.dtype


def find_conv_groups(view: GraphView, provider: Any) -> list[list[Node]]:
    """Groups of at least two nodes starting at a Conv the numba provider computes."""
    from onnxplug_numba.ops.op_conv import conv_supported

    offered = {id(n) for n in view.nodes}
    groups = []
    for node in view.nodes:
        if id(node) not in offered:  # taken by an earlier group
            continue
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or not conv_supported(node, view):
            continue
        group = [node]
        nxt = _sole_reader(view, offered, node)
        if nxt is not None and nxt.op_type == "BatchNormalization" and nxt.inputs[0] == node.outputs[0] \
                and _constant(view, node.inputs[1]) is not None and _batch_norm_ok(view, nxt):
            group.append(nxt)
            nxt = _sole_reader(view, offered, nxt)
        if nxt is not None and nxt.op_type == "Add" and nxt.opset >= 7:
            last = group[-1].outputs[0]
            other = nxt.inputs[1] if nxt.inputs[0] == last else nxt.inputs[0]
            if other != last and _same_known_shape(view, other, last) \
                    and _same_known_shape(view, nxt.outputs[0], last):
                group.append(nxt)
                nxt = _sole_reader(view, offered, nxt)
        if nxt is not None and nxt.op_type in _ACTIVATIONS and nxt.inputs[0] == group[-1].outputs[0] \
                and view.dtype_of(nxt.outputs[0]) == view.dtype_of(node.outputs[0]):
            if nxt.op_type != "Clip" or _clip_bounds(view, nxt) is not None:
                group.append(nxt)
        if len(group) >= 2:
            groups.append(group)
            offered -= {id(n) for n in group}
    return groups


class FusedConvKernel(Kernel):
    """A Conv group as one kernel: folded BatchNormalization, residual and activation in the epilogue."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        conv_node = subgraph.nodes[0]
        super().__init__(conv_node, context)
        from onnxplug_numba.threads import ThreadControl

        self.threads = getattr(context.provider, "threads", None) or ThreadControl(context.intra_op_num_threads)
        view = subgraph.view
        by_op = {n.op_type: n for n in subgraph.nodes[1:]}
        self.positions = {name: i for i, name in enumerate(subgraph.inputs)}
        self.x_name, self.w_name = conv_node.inputs[0], conv_node.inputs[1]
        self.b_name = conv_node.inputs[2] if len(conv_node.inputs) > 2 else ""
        self.weight: np.ndarray | None = None
        self.bias: np.ndarray | None = None
        bn = by_op.get("BatchNormalization")
        if bn is not None:
            w = _constant(view, self.w_name).astype(np.float64)  # type: ignore[union-attr]
            b = _constant(view, self.b_name)
            gamma, beta, mean, var = (_constant(view, n).astype(np.float64) for n in bn.inputs[1:5])  # type: ignore[union-attr]
            scale = gamma / np.sqrt(var + float(bn.attr("epsilon", 1e-5)))
            dtype = view.dtype_of(self.x_name)
            self.weight = (w * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(dtype)
            bias = (b.astype(np.float64) if b is not None else 0.0) - mean
            self.bias = (bias * scale + beta).astype(dtype)
        add = by_op.get("Add")
        self.residual_name = ""
        if add is not None:
            produced = {n.outputs[0] for n in subgraph.nodes}
            self.residual_name = next(i for i in add.inputs if i not in produced)
        act_node = next((n for n in subgraph.nodes if n.op_type in _ACTIVATIONS), None)
        consts = _clip_bounds(view, act_node) if act_node is not None and act_node.op_type == "Clip" else None
        self.act = activation_of(act_node, consts)
        self.conv_node = conv_node
        # the input's rank may only be known at run time (its inferred shape can be None)
        self._specs: dict[int, ConvSpec] = {}
        self.constant_weight = self.weight is not None or self.w_name in context.constants
        # folded or constant weight and bias: each input shape's call is kept
        self._calls: dict[tuple[tuple[int, ...], bool], ConvCall] | None = \
            {} if self.weight is not None or (self.constant_weight and (not self.b_name or
                                                                         self.b_name in context.constants)) else None
        weight = self.weight if self.weight is not None else context.constants.get(self.w_name)
        if weight is not None:
            want_kernels(context, weight, self._spec(weight.ndim))

    def _value(self, inputs: tuple[Any, ...], name: str) -> Any:
        return inputs[self.positions[name]] if name else None

    def compute(self, *inputs: Any) -> np.ndarray:
        x = self._value(inputs, self.x_name)
        w = self.weight if self.weight is not None else self._value(inputs, self.w_name)
        b = self.bias if self.weight is not None else self._value(inputs, self.b_name)
        residual = self._value(inputs, self.residual_name)
        if self._calls is not None:
            return kept_conv(self._calls, x, w, b, self._spec(x.ndim), self.threads, residual, self.act)
        return conv(x, w, b, self._spec(x.ndim), self.threads, residual=residual, act=self.act,
                    constant_weight=self.constant_weight)

    def _spec(self, rank: int) -> ConvSpec:
        spec = self._specs.get(rank)
        if spec is None:
            spec = self._specs[rank] = ConvSpec.from_node(self.conv_node, rank - 2)
        return spec
