"""A graph's declared input and output types as onnxruntime reads them.

An input needs a type with an element type (the loader refuses one without, naming it, as
onnxruntime does). An output may lack a type (:func:`untyped_outputs` lists them). An output's
declared shape is merged with the inferred one as onnxruntime merges them (onnx's
``mergeInShapeInfo`` with its lenient fallback): an inferred size fills an unknown or named
dimension, an inferred name an unknown one; a size conflict leaves that dimension unknown, a rank
conflict the rank. Dimension names onnx's shape inference makes up (``unk__0``, ...) are unknown
dimensions, as in onnxruntime; names the model declares are kept. (Negative sizes and empty names
already read as unknown: :mod:`onnxplug.ir.types`.)
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterator

import onnx

from onnxplug.errors import ModelValidationError
from onnxplug.ir.types import Dim, ValueType

_MADE_UP = re.compile(r"unk__\d+")


def check_inputs(graph: onnx.GraphProto, label: str) -> None:
    """Refuse a graph input without a type or without an element type, naming it."""
    initializers = {t.name for t in graph.initializer}
    for vi in graph.input:
        which = vi.type.WhichOneof("value")
        if which is None:
            raise ModelValidationError(f"model {label}: input {vi.name!r} has no type (onnxruntime refuses "
                                       f"such a model too)")
        if which == "tensor_type" and not vi.type.tensor_type.elem_type and vi.name not in initializers:
            raise ModelValidationError(f"model {label}: input {vi.name!r} has no element type (onnxruntime "
                                       f"refuses such a model too)")


def untyped_outputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """The graph outputs that declare no type."""
    return [vi for vi in graph.output if vi.type.WhichOneof("value") is None]


def clear_invalid_dims(model: onnx.ModelProto) -> None:
    """Make negative sizes and empty names unknown dimensions in the model's value infos, as
    onnxruntime does before it merges inferred shapes (so onnx's merge fills them as its does)."""
    for dim in _dims(model):
        if (dim.HasField("dim_value") and dim.dim_value < 0) or (dim.HasField("dim_param") and not dim.dim_param):
            dim.Clear()


def declared_dim_names(model: onnx.ModelProto) -> frozenset[str]:
    """Every dimension name the model's own value infos declare, in all its graphs."""
    return frozenset(d.dim_param for d in _dims(model) if d.dim_param)


def _dims(model: onnx.ModelProto) -> Iterator[onnx.TensorShapeProto.Dimension]:
    """The dimensions of every value info of every graph of ``model``."""

    def of_type(t: onnx.TypeProto) -> Iterator[onnx.TensorShapeProto.Dimension]:
        which = t.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            yield from getattr(t, which).shape.dim
        elif which in ("sequence_type", "optional_type"):
            yield from of_type(getattr(t, which).elem_type)
        elif which == "map_type":
            yield from of_type(t.map_type.value_type)

    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        for vi in (*g.input, *g.output, *g.value_info):
            yield from of_type(vi.type)
        for node in g.node:
            for attribute in node.attribute:
                graphs.extend([attribute.g] if attribute.HasField("g") else attribute.graphs)


def merge_output(declared: ValueType | None, inferred: ValueType | None,
                 kept_names: frozenset[str]) -> ValueType | None:
    """An output's type as onnxruntime reports it: the declared type merged with the inferred one,
    whose made-up dimension names (not among ``kept_names``) count as unknown."""
    inferred = _without_made_up(inferred, kept_names)
    if declared is None:
        return inferred
    if inferred is None or declared.kind != "tensor" or inferred.kind != "tensor":
        return declared
    if declared.shape is None:
        shape = inferred.shape
    elif inferred.shape is None:
        shape = declared.shape
    elif len(declared.shape) != len(inferred.shape):
        shape = None
    else:
        shape = _merge_dims(declared.shape, inferred.shape)
    return dataclasses.replace(declared, elem_type=declared.elem_type or inferred.elem_type, shape=shape)


def _merge_dims(target: tuple[Dim, ...], source: tuple[Dim, ...]) -> tuple[Dim, ...]:
    merged = list(target)
    for i, (s, t) in enumerate(zip(source, target)):
        if isinstance(s, int):
            if isinstance(t, int) and t != s:  # onnx fails the merge; onnxruntime falls back to the union
                return tuple(m if (type(m) is type(s_) and m == s_) else None for m, s_ in zip(merged, source))
            merged[i] = s
        elif t is None and s is not None:
            merged[i] = s
    return tuple(merged)


def _without_made_up(t: ValueType | None, kept_names: frozenset[str]) -> ValueType | None:
    if t is None or t.kind != "tensor" or t.shape is None:
        return t
    if not any(isinstance(d, str) and _MADE_UP.fullmatch(d) and d not in kept_names for d in t.shape):
        return t
    shape = tuple(None if isinstance(d, str) and _MADE_UP.fullmatch(d) and d not in kept_names else d for d in t.shape)
    return dataclasses.replace(t, shape=shape)
