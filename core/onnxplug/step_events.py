"""What a profiled run records of each step it runs: timing, nesting, and the types, shapes and
sizes of what the step read and wrote, with the names onnxruntime's profiles give them.

An event only describes values; it keeps none of them alive.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class StepEvent(NamedTuple):
    """One step run: what a profile's ``Node`` event says."""

    name: str
    kind: str
    op_type: str
    provider: str
    start: float  #: ``time.perf_counter()``
    duration: float  #: seconds
    parent: str  #: the If/Loop/Scan step whose body ran it, or ""
    input_type_shape: list[dict[str, Any]]
    output_type_shape: list[dict[str, Any]]
    activation_size: int  #: bytes of the inputs that are not initializers
    parameter_size: int  #: bytes of the inputs that are initializers
    output_size: int


#: numpy dtype names as onnxruntime's profiles spell element types
_ORT_TYPE_NAMES = {"float32": "float", "float64": "double", "bool": "bool", "object": "string", "str": "string"}


def type_shape(value: Any) -> dict[str, Any]:
    """``{element type: shape}`` as onnxruntime's ``input_type_shape`` entries; a sequence is
    ``{"sequence": length}``, and an omitted optional value ``{}``."""
    if value is None:
        return {}
    if isinstance(value, list):
        return {"sequence": len(value)}
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is None or shape is None:
        data = getattr(value, "data", None)  # a device value wrapping an array
        dtype, shape = getattr(data, "dtype", None), getattr(data, "shape", None)
    if dtype is None or shape is None:
        return {type(value).__name__: []}
    name = _type_names.get(dtype)
    if name is None:
        found = np.dtype(dtype).name
        name = _type_names[dtype] = _ORT_TYPE_NAMES.get(found, found)
    return {name: list(map(int, shape))}


#: element type names by dtype, worked out once per dtype (a profiled run names every value)
_type_names: dict[Any, str] = {}
