"""Helpers kernels need again and again: broadcasting, attribute defaults, conv/pool shapes, type
inference, and the dtype check whose ``Decline`` says why a node is not claimed.

Shapes may hold symbolic dimensions (``str``) or unknown ones (``None``) where the function says so.
Bad arguments raise :class:`ShapeError`, a ``ValueError``, with a message naming the culprit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection, Sequence

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from onnxplug.errors import UnknownOpError
from onnxplug.geometry import (
    SAME_PADS,
    ShapeError,
    conv_transpose_pads,
    decode_auto_pad,
    output_size,
    per_axis,
    resolve_pads,
    window_geometry,
)
from onnxplug.ir import Node, ValueType, elem_type_of, numpy_dtype
from onnxplug.ir.types import Dim
from onnxplug.provider import Decline

if TYPE_CHECKING:
    from onnxplug.provider import GraphView

__all__ = ["ShapeError", "attribute_defaults", "broadcast_shapes", "check_dtypes", "conv_output_shape",
           "conv_transpose_pads", "decode_auto_pad", "infer_output_types", "numpy_dtype", "onnx_type_name",
           "output_size", "pool_output_shape", "resolve_pads", "untyped_reason", "window_geometry"]

_STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training")


# --- broadcasting ------------------------------------------------------------------------------

def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """The shape of ONNX multidirectional (numpy) broadcasting of ``shapes``.

    Dimensions may be ints, symbols (``str``) or ``None`` (unknown). A symbol against 1 stays the
    symbol; a symbol or unknown against n > 1 becomes n (the only size that broadcasts); two
    different symbols, or an unknown against 1, give ``None``. Two fixed sizes other than 1 that
    differ raise :class:`ShapeError`.
    """
    rank = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(_broadcast_dim([p[axis] for p in padded], shapes, axis - rank) for axis in range(rank))


def _broadcast_dim(dims: list[Dim], shapes: tuple[Sequence[Dim], ...], axis: int) -> Dim:
    fixed = {d for d in dims if isinstance(d, int) and d != 1}
    if len(fixed) > 1:
        listing = ", ".join(str(list(s)) for s in shapes)
        raise ShapeError(f"shapes {listing} do not broadcast: axis {axis} has sizes {sorted(fixed)}")
    if fixed:
        return fixed.pop()
    rest = [d for d in dims if d != 1]
    if not rest:
        return 1
    if None in rest or len(set(rest)) > 1:
        return None
    return rest[0]


# --- attributes ---------------------------------------------------------------------------------

def _schema(node: Node) -> onnx.defs.OpSchema | None:
    domain = "" if node.domain == "ai.onnx" else node.domain
    opset = node.opset or onnx.defs.onnx_opset_version()
    try:
        return onnx.defs.get_schema(node.op_type, max_inclusive_version=opset, domain=domain)
    except onnx.defs.SchemaError:
        if domain in _STANDARD_DOMAINS:
            raise UnknownOpError(f"{node.describe()}: ONNX defines no op {node.op_type!r} in domain "
                                 f"{domain or 'ai.onnx'!r} at opset {opset}") from None
        return None


def _attribute_value(proto: AttributeProto) -> Any:
    if proto.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(proto.t)
    value = helper.get_attribute_value(proto)
    if proto.type == AttributeProto.STRING:
        return value.decode("utf-8")
    if proto.type == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in value]
    return value


def attribute_defaults(node: Node) -> dict[str, Any]:
    """The node's attributes, completed with the defaults of the op's schema at the node's opset.

    Values are as ``Node.attr`` returns them (strings as ``str``, tensors as numpy arrays).
    Attributes without a default that the node leaves out are absent. For custom domains
    without a registered schema, only the node's own attributes are returned.
    """
    values: dict[str, Any] = {}
    schema = _schema(node)
    if schema is not None:
        for name, attr in schema.attributes.items():
            if attr.default_value.type != AttributeProto.UNDEFINED:
                values[name] = _attribute_value(attr.default_value)
    for name, attribute in node.attributes.items():
        values[name] = attribute.value
    return values


# --- convolution and pooling shapes -------------------------------------------------------------
# The pads and window counts are the core's (onnxplug.geometry), shared by every provider.

def conv_output_shape(input_shape: Sequence[Dim], weight_shape: Sequence[Dim], auto_pad: str = "NOTSET",
                      strides: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
                      pads: Sequence[int] | None = None) -> tuple[Dim, ...]:
    """The output shape ``(N, M, *spatial)`` of a Conv with input ``(N, C, *spatial)`` and weight
    ``(M, C/group, *kernel)``. Spatial sizes that are not ints give ``None``."""
    if len(weight_shape) != len(input_shape) or len(input_shape) < 3:
        raise ShapeError(f"Conv input shape {list(input_shape)} and weight shape {list(weight_shape)} "
                         "must have the same rank, at least 3")
    kernel = weight_shape[2:]
    if not all(isinstance(k, int) for k in kernel):
        raise ShapeError(f"Conv weight shape {list(weight_shape)}: kernel sizes must be known")
    spatial = _windowed_sizes(input_shape[2:], kernel, auto_pad, strides, dilations, pads, ceil_mode=False)
    return (input_shape[0], weight_shape[0], *spatial)


def pool_output_shape(input_shape: Sequence[Dim], kernel_shape: Sequence[int], auto_pad: str = "NOTSET",
                      strides: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
                      pads: Sequence[int] | None = None, ceil_mode: int = 0) -> tuple[Dim, ...]:
    """The output shape ``(N, C, *spatial)`` of MaxPool/AveragePool/LpPool on ``(N, C, *spatial)``.

    With ``ceil_mode``, sizes round up, except that a last window starting in the end padding is
    dropped (as onnxruntime does). ``SAME_*`` gives ``ceil(in / stride)`` as the ONNX spec and its
    shape inference say; note that onnxruntime's pools ignore ``dilations`` under ``SAME_*``.
    """
    if len(input_shape) != len(kernel_shape) + 2:
        raise ShapeError(f"pool input shape {list(input_shape)} must have rank 2 + len(kernel_shape "
                         f"{list(kernel_shape)})")
    spatial = _windowed_sizes(input_shape[2:], kernel_shape, auto_pad, strides, dilations, pads,
                              ceil_mode=bool(ceil_mode))
    return (input_shape[0], input_shape[1], *spatial)


def _windowed_sizes(in_spatial: Sequence[Dim], kernel: Sequence[int], auto_pad: str,
                    strides: Sequence[int] | None, dilations: Sequence[int] | None,
                    pads: Sequence[int] | None, *, ceil_mode: bool) -> list[Dim]:
    rank = len(kernel)
    strides_ = per_axis("strides", strides, rank, 1)
    dilations_ = per_axis("dilations", dilations, rank, 1)
    known = [d if isinstance(d, int) else 0 for d in in_spatial]
    begins, ends = resolve_pads(auto_pad, known, kernel, strides_, dilations_, pads)
    sizes: list[Dim] = []
    for size, k, s, d, pb, pe in zip(in_spatial, kernel, strides_, dilations_, begins, ends):
        if not isinstance(size, int):
            sizes.append(None)
            continue
        if decode_auto_pad(auto_pad) in SAME_PADS:
            sizes.append(-(-size // s))
            continue
        if size + pb + pe < (k - 1) * d + 1:
            raise ShapeError(f"window {k} (dilation {d}) is larger than the padded input size {size + pb + pe}")
        sizes.append(output_size(size, k, s, d, pb, pe, ceil_mode))
    return sizes


# --- types --------------------------------------------------------------------------------------

def onnx_type_name(dtype: np.dtype | int | type) -> str:
    """The type string ONNX schemas and onnxruntime's ``NodeArg.type`` use, e.g. ``'tensor(float)'``.

    Accepts a numpy dtype (or scalar type) or an ONNX element type number.
    """
    from onnxplug.ir.types import elem_type_name

    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        elem = int(dtype)
        if elem not in TensorProto.DataType.values():
            raise ValueError(f"{elem} is not an ONNX element type")
    else:
        elem = elem_type_of(np.dtype(dtype))
    return f"tensor({elem_type_name(elem)})"


def infer_output_types(node: Node, view: GraphView) -> list[ValueType | None]:
    """The types of ``node``'s outputs, from ONNX's shape inference on the node alone.

    Input types come from ``view``; constant inputs (initializers) are passed as data, so shapes
    that depend on them (Reshape, Slice, ...) are inferred too. What the inference leaves open
    (unknown rank, unknown or symbolic sizes) is filled from the type declared in the graph, if
    any; nodes with subgraphs and nodes of custom domains without a schema get the declared types. Raises :class:`ShapeError` when inference finds the
    node's known input types inconsistent.
    """
    declared = [view.type_of(o) if o else None for o in node.outputs]
    schema = _schema(node)
    if schema is None or node.subgraphs:  # subgraph bodies need outer-scope types onnx is not given here
        return declared
    input_types: dict[str, onnx.TypeProto] = {}
    input_data: dict[str, onnx.TensorProto] = {}
    complete = True
    for name in node.inputs:
        if not name:
            continue
        t = view.type_of(name)
        if t is None:
            complete = False
            continue
        input_types[name] = t.to_proto()
        value = view.constant(name)
        if value is not None and value.dtype != object:
            input_data[name] = numpy_helper.from_array(value, name)
    if not complete:  # onnx cannot infer from a partial signature
        return declared
    opsets = [helper.make_opsetid(d, v) for d, v in view.opsets.items()]
    try:
        inferred = onnx.shape_inference.infer_node_outputs(schema, node.to_proto(), input_types, input_data,
                                                           opset_imports=opsets)
    except (onnx.shape_inference.InferenceError, RuntimeError) as e:
        raise ShapeError(f"{node.describe()}: shape inference failed: {str(e).strip().splitlines()[0]}") from e
    result: list[ValueType | None] = []
    for name, known in zip(node.outputs, declared):
        proto = inferred.get(name) if name else None
        result.append(_merge(ValueType.from_proto(proto) if proto is not None else None, known))
    return result


def _merge(inferred: ValueType | None, declared: ValueType | None) -> ValueType | None:
    """The inferred type, with what it leaves open filled from the declared one (fixed size > symbol > None)."""
    if inferred is None or declared is None or inferred.kind != "tensor" or declared.kind != "tensor":
        return inferred if inferred is not None else declared
    elem_type = inferred.elem_type or declared.elem_type
    shape = inferred.shape
    if shape is None:
        shape = declared.shape
    elif declared.shape is not None and len(declared.shape) == len(shape):
        shape = tuple(_better_dim(a, b) for a, b in zip(shape, declared.shape))
    return ValueType.tensor(elem_type, shape)


def _better_dim(inferred: Dim, declared: Dim) -> Dim:
    if isinstance(inferred, int) or declared is None:
        return inferred
    if isinstance(declared, int) or inferred is None:
        return declared
    return inferred


def _dtype_unknown(view: GraphView, name: str) -> bool:
    t = view.type_of(name)
    return t is None or (t.kind == "tensor" and t.dtype is None)


def untyped_reason(view: GraphView, name: str) -> str:
    """Why ``name`` has no tensor element type: a sequence or map, or the node where type inference
    stopped (the first producer upstream whose inputs are typed but whose output is not), or an
    input or outer-scope value that declares none."""
    t = view.type_of(name)
    if t is not None and t.kind != "tensor":
        return f"{name!r} is a {t.kind}, not a tensor"
    current, seen = name, set()
    while current not in seen:
        seen.add(current)
        producer = view.producer(current)
        if producer is None:
            return (f"the element type of {name!r} is unknown: "
                    f"{'it' if current == name else repr(current)}, an input or outer-scope value, declares none")
        upstream = next((i for i in producer.inputs if i and _dtype_unknown(view, i)), None)
        if upstream is None:
            via = "" if current == name else f" (via {current!r})"
            return (f"the element type of {name!r} is unknown: type inference gives none for the output of "
                    f"{producer.describe()}{via}")
        current = upstream
    return f"the element type of {name!r} is unknown"


def check_dtypes(node: Node, view: GraphView, allowed: Collection[str]) -> bool | Decline:
    """``True`` when every tensor the node reads or writes has a known element type named in
    ``allowed`` (numpy names: ``"float32"``), else a ``Decline`` naming the first that does not:
    what a ``Kernel.supports`` can return as is."""
    for name in [n for n in [*node.inputs, *node.outputs] if n]:
        t = view.type_of(name)
        if t is None or t.kind != "tensor" or t.dtype is None:
            return Decline("dtype", untyped_reason(view, name))
        if t.dtype.name not in allowed:
            return Decline("dtype", f"{name!r} is {t.dtype.name}, not one of {', '.join(sorted(allowed))}")
    return True
