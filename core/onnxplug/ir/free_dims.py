"""Free dimension overrides: symbolic dimensions fixed to sizes before a session plans the graph,
as onnxruntime's ``SessionOptions.add_free_dimension_override_by_name``."""

from __future__ import annotations

import dataclasses
from typing import Mapping

from onnxplug.ir.graph import Graph, ValueInfo
from onnxplug.ir.types import ValueType


def input_dim_names(graph: Graph) -> set[str]:
    """The symbolic dimension names of ``graph``'s inputs."""
    return {d for vi in graph.inputs if vi.type is not None for d in _dims(vi.type) if isinstance(d, str)}


def override_free_dimensions(graph: Graph, sizes: Mapping[str, int]) -> None:
    """Replace every symbolic dimension named in ``sizes`` by its size, in the value types of
    ``graph`` and its subgraphs (inputs, outputs and inferred value infos alike, as shape inference
    from the fixed inputs would)."""
    for g in list(graph.graphs()):
        g.inputs = [_fixed(vi, sizes) for vi in g.inputs]
        g.outputs = [_fixed(vi, sizes) for vi in g.outputs]
        g.value_info = {name: _fixed(vi, sizes) for name, vi in g.value_info.items()}


def _dims(t: ValueType) -> tuple:
    if t.kind in ("tensor", "sparse_tensor"):
        return t.shape or ()
    return _dims(t.element) if t.element is not None else ()


def _fixed_type(t: ValueType | None, sizes: Mapping[str, int]) -> ValueType | None:
    if t is None:
        return None
    if t.kind in ("tensor", "sparse_tensor"):
        if t.shape is None or not any(isinstance(d, str) and d in sizes for d in t.shape):
            return t
        return dataclasses.replace(t, shape=tuple(sizes.get(d, d) if isinstance(d, str) else d for d in t.shape))
    element = _fixed_type(t.element, sizes)
    return t if element is t.element else dataclasses.replace(t, element=element)


def _fixed(vi: ValueInfo, sizes: Mapping[str, int]) -> ValueInfo:
    t = _fixed_type(vi.type, sizes)
    return vi if t is vi.type else dataclasses.replace(vi, type=t)
