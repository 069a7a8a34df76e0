"""Function bodies (standard ops only) for the project's fused ops, so saved models stay portable.

A saved optimized model keeps each fused node as a call to a model-local function of its domain;
onnxruntime (or any ONNX runtime) inlines the body, while onnxplug's loader keeps the call and
runs its own kernel. One node's body depends on its attributes (``activation="Clip"``,
``approximate="tanh"``), so each distinct body is a function *overload* (ONNX IR 10) and the node
names the overload it calls.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxplug.ir import Graph, Model, Node
from onnxplug.logs import get_logger
from onnxplug.optimizer.fused_ops import (
    BIAS_GELU,
    FUSED_CONV,
    FUSED_GEMM,
    FUSED_MATMUL,
    GELU,
    INVERTED_BOTTLENECK,
    LAYER_NORM,
    MULTI_HEAD_ATTENTION,
    RMS_NORM,
    NHWC_DOMAIN,
    OWN_DOMAIN,
    SKIP_LAYER_NORM,
)
from onnxplug.optimizer.rewrite import model_graphs

logger = get_logger("onnxplug.optimizer")

#: Overloaded model-local functions need this IR version.
FUNCTION_OVERLOAD_IR = 10


class _Body:
    """Accumulates the nodes of one function body, with fresh temporary names."""

    def __init__(self, dtype: np.dtype, opset: int) -> None:
        self.dtype = np.dtype(dtype)
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self._count = 0

    def op(self, op_type: str, inputs: list[str], out: str | None = None, **attrs: Any) -> str:
        """Add a node; returns its (only) output."""
        if out is None:
            out = f"t{self._count}"
            self._count += 1
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def const(self, value: Any, dtype: Any = None) -> str:
        """A Constant node of the body's dtype (or ``dtype``)."""
        array = np.asarray(value, dtype=dtype or self.dtype)
        return self.op("Constant", [], value=numpy_helper.from_array(array))

    def reduce_mean(self, x: str, axes: list[int]) -> str:
        """ReduceMean keeping dims, with axes as attribute or input depending on the opset."""
        if self.opset >= 18:
            return self.op("ReduceMean", [x, self.const(axes, np.int64)], keepdims=1)
        return self.op("ReduceMean", [x], axes=axes, keepdims=1)


def _activation(b: _Body, y: str, node: Node, out: str, prefix: str = "") -> None:
    """``out = activation(y)`` for the node's ``{prefix}activation`` and its parameters."""
    name = node.attr(f"{prefix}activation", "")
    params = [float(p) for p in node.attr(f"{prefix}activation_params", []) or []]
    if not name:
        b.op("Identity", [y], out)
    elif name == "LeakyRelu":
        b.op("LeakyRelu", [y], out, alpha=params[0] if params else 0.01)
    elif name == "HardSigmoid":
        b.op("HardSigmoid", [y], out, alpha=params[0] if params else 0.2, beta=params[1] if params else 0.5)
    elif name == "Clip":
        low, high = (params + [-math.inf, math.inf])[:2] if len(params) < 2 else params[:2]
        if b.opset >= 11:
            b.op("Clip", [y, b.const(low) if math.isfinite(low) else "",
                          b.const(high) if math.isfinite(high) else ""], out)
        else:
            bounds = {k: v for k, v in (("min", low), ("max", high)) if math.isfinite(v)}
            b.op("Clip", [y], out, **bounds)
    else:
        b.op(name, [y], out)


def _node_attrs(node: Node, skip: tuple[str, ...] = ("activation", "activation_params")) -> dict[str, Any]:
    return {k: a.value for k, a in node.attributes.items() if k not in skip}


def _gelu(b: _Body, x: str, approximate: str, out: str) -> None:
    if approximate == "tanh":
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Add", [x, b.op("Mul", [cube, b.const(0.044715)])])
        t = b.op("Tanh", [b.op("Mul", [inner, b.const(math.sqrt(2.0 / math.pi))])])
        half = b.op("Mul", [x, b.op("Add", [t, b.const(1.0)])])
    else:
        e = b.op("Erf", [b.op("Mul", [x, b.const(1.0 / math.sqrt(2.0))])])
        half = b.op("Mul", [x, b.op("Add", [e, b.const(1.0)])])
    b.op("Mul", [half, b.const(0.5)], out)


def _layer_norm(b: _Body, x: str, scale: str, bias: str, axes: list[int], epsilon: float, out: str) -> None:
    centered = b.op("Sub", [x, b.reduce_mean(x, axes)])
    variance = b.reduce_mean(b.op("Mul", [centered, centered]), axes)
    std = b.op("Sqrt", [b.op("Add", [variance, b.const(epsilon)])])
    scaled = b.op("Mul", [b.op("Div", [centered, std]), scale])
    if bias:
        b.op("Add", [scaled, bias], out)
    else:
        b.op("Identity", [scaled], out)


def _norm_axes(axis: int, rank: int | None) -> list[int] | None:
    if axis < 0:
        return list(range(axis, 0))
    return None if rank is None else list(range(axis - rank, 0))


BodyBuilder = Callable[[_Body, Node, list[str], list[str], "int | None"], bool]


def _fused_conv(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    y = b.op("Conv", [i for i in ins[:3] if i], **_node_attrs(node))
    if len(ins) > 3 and ins[3]:
        y = b.op("Add", [y, ins[3]])
    _activation(b, y, node, outs[0])
    return True


def _fused_gemm(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    gemm = b.op("Gemm", [i for i in ins if i], **_node_attrs(node))
    _activation(b, gemm, node, outs[0])
    return True


def _fused_matmul(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    _activation(b, b.op("MatMul", ins[:2]), node, outs[0])
    return True


def _gelu_fn(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    _gelu(b, ins[0], node.attr("approximate", "none"), outs[0])
    return True


def _bias_gelu(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    _gelu(b, b.op("Add", ins[:2]), node.attr("approximate", "none"), outs[0])
    return True


def _layer_norm_fn(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    axes = _norm_axes(int(node.attr("axis", -1)), rank)
    if axes is None:
        return False
    bias = ins[2] if len(ins) > 2 else ""
    _layer_norm(b, ins[0], ins[1], bias, axes, float(node.attr("epsilon", 1e-5)), outs[0])
    return True


def _rms_norm_fn(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    axes = _norm_axes(int(node.attr("axis", -1)), rank)
    if axes is None:
        return False
    mean_square = b.reduce_mean(b.op("Mul", [ins[0], ins[0]]), axes)
    std = b.op("Sqrt", [b.op("Add", [mean_square, b.const(float(node.attr("epsilon", 1e-5)))])])
    b.op("Mul", [b.op("Div", [ins[0], std]), ins[1]], outs[0])
    return True


def _skip_layer_norm(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    total = b.op("Add", ins[:2])
    if len(ins) > 4 and ins[4]:
        total = b.op("Add", [total, ins[4]])
    if len(outs) > 1 and outs[1]:
        b.op("Identity", [total], outs[1])
    beta = ins[3] if len(ins) > 3 else ""
    _layer_norm(b, total, ins[2], beta, [-1], float(node.attr("epsilon", 1e-5)), outs[0])
    return True


def _attention(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    heads = int(node.attr("num_heads"))
    split = b.const([0, 0, heads, -1], np.int64)
    q = b.op("Transpose", [b.op("Reshape", [ins[0], split])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [ins[1], split])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [ins[2], split])], perm=[0, 2, 1, 3])
    scores = b.op("MatMul", [q, k])
    scale = node.attr("scale")
    if scale is not None:
        scores = b.op("Mul", [scores, b.const(float(scale))])
    else:  # 1/sqrt(head size), computed from the shape at run time
        size = b.op("Cast", [b.op("Shape", [q], start=-1)], to=helper.np_dtype_to_tensor_dtype(b.dtype))
        scores = b.op("Div", [scores, b.op("Sqrt", [size])])
    if len(ins) > 3 and ins[3]:
        scores = b.op("Add", [scores, ins[3]])
    context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    merged = b.op("Transpose", [context], perm=[0, 2, 1, 3])
    b.op("Reshape", [merged, b.const([0, 0, -1], np.int64)], outs[0])
    return True


_BUILDERS: dict[str, BodyBuilder] = {
    FUSED_CONV: _fused_conv, FUSED_GEMM: _fused_gemm, FUSED_MATMUL: _fused_matmul, GELU: _gelu_fn,
    BIAS_GELU: _bias_gelu, LAYER_NORM: _layer_norm_fn, SKIP_LAYER_NORM: _skip_layer_norm,
    MULTI_HEAD_ATTENTION: _attention, RMS_NORM: _rms_norm_fn,
}


def channels_last_perm(rank: int) -> list[int]:
    """The permutation NCHW... -> NHWC... for a tensor of ``rank``."""
    return [0, *range(2, rank), 1]


def channels_first_perm(rank: int) -> list[int]:
    """The permutation NHWC... -> NCHW... for a tensor of ``rank``."""
    return [0, rank - 1, *range(1, rank - 1)]


def _channels_last(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    """An op rewritten to channels-last: transpose in, the standard op, transpose out."""
    if rank is None:
        return False
    inputs = list(ins)
    # the data and FusedConv's residual Z are channels-last
    for position in (0, 3) if node.op_type == "FusedConv" else (0,):
        if position < len(inputs) and inputs[position]:
            inputs[position] = b.op("Transpose", [inputs[position]], perm=channels_first_perm(rank))
    own = _BUILDERS.get(node.op_type) if node.op_type == "FusedConv" else None
    if own is not None:  # the standard op is itself a function of this module: inline its body
        y = "nchw_out"
        if not own(b, node, inputs, [y], rank):
            return False
    else:
        y = b.op(node.op_type, inputs, **_node_attrs(node, ()))
    b.op("Transpose", [y], outs[0], perm=channels_last_perm(rank))
    return True


def _inverted_bottleneck(b: _Body, node: Node, ins: list[str], outs: list[str], rank: int | None) -> bool:
    """NHWC in and out: transpose in, 1x1 Conv, depthwise Conv, 1x1 Conv (+ residual), each with
    its activation, transpose out."""
    if rank != 4:
        return False
    x = b.op("Transpose", [ins[0]], perm=channels_first_perm(rank))
    _activation(b, b.op("Conv", [x] + [i for i in ins[1:3] if i]), node, "expanded", "expand_")
    depthwise = b.op("Conv", ["expanded"] + [i for i in ins[3:5] if i], group=int(node.attr("group")),
                     strides=list(node.attr("strides")), pads=list(node.attr("pads")), kernel_shape=[3, 3])
    _activation(b, depthwise, node, "filtered", "depthwise_")
    y = b.op("Conv", ["filtered"] + [i for i in ins[5:7] if i])
    if len(ins) > 7 and ins[7]:
        y = b.op("Add", [y, b.op("Transpose", [ins[7]], perm=channels_first_perm(rank))])
    _activation(b, y, node, "nchw_out")
    b.op("Transpose", ["nchw_out"], outs[0], perm=channels_last_perm(rank))
    return True


def _function_for(graph: Graph, node: Node, opset: int) -> onnx.FunctionProto | None:
    if node.domain == NHWC_DOMAIN and node.op_type == INVERTED_BOTTLENECK:
        builder: BodyBuilder | None = _inverted_bottleneck
    else:
        builder = _channels_last if node.domain == NHWC_DOMAIN else (
            _BUILDERS.get(node.op_type) if node.domain == OWN_DOMAIN else None)
    if builder is None:
        return None
    t = graph.type_of(node.inputs[0]) if node.inputs and node.inputs[0] else None
    dtype = t.dtype if t is not None and t.dtype is not None else np.dtype(np.float32)
    rank = len(t.shape) if t is not None and t.shape is not None else None
    ins = [f"in{i}" if name else "" for i, name in enumerate(node.inputs)]
    outs = [f"out{i}" if name else "" for i, name in enumerate(node.outputs)]
    body = _Body(dtype, opset)
    if not builder(body, node, ins, outs, rank):
        return None
    # Formal inputs keep their positions (a call passes '' for an omitted one); fused nodes
    # have no omitted outputs, so the formal outputs are the produced ones.
    return helper.make_function(
        node.domain, node.op_type, [f"in{i}" for i in range(len(ins))], [o for o in outs if o],
        body.nodes, [helper.make_opsetid("", opset)])


def attach_functions(model: Model) -> int:
    """Give every node of the project's domains a function body; returns how many were made.

    Functions of those domains already on the model are rebuilt from the current nodes. A node
    without a known body (a third-party op) is left as is: the model then saves without one.
    """
    model.functions = [f for f in model.functions if not f.domain.startswith(OWN_DOMAIN)]
    opset = model.opsets.get("", 17)
    by_digest: dict[str, onnx.FunctionProto] = {}
    for graph in model_graphs(model):
        for node in graph.nodes:
            if not node.domain.startswith(OWN_DOMAIN):
                continue
            function = _function_for(graph, node, opset)
            if function is None:
                node.overload = ""
                logger.warning("no function body for %s: a saved model will need onnxplug", node.describe())
                continue
            digest = hashlib.sha1(function.SerializeToString(deterministic=True)).hexdigest()[:12]
            if digest not in by_digest:
                function.overload = f"v{digest}"
                by_digest[digest] = function
            node.overload = f"v{digest}"
    model.functions.extend(by_digest.values())
    if by_digest:
        model.ir_version = max(model.ir_version, FUNCTION_OVERLOAD_IR)
    return len(by_digest)
