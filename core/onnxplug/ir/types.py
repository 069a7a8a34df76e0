"""Value types of the IR: tensors, sequences, optionals and maps, with onnxruntime's type strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import onnx
from onnx import TensorProto, helper

Dim = Union[int, str, None]
"""One dimension: a fixed size, a symbolic name (``dim_param``) or unknown."""

# onnxruntime spells element types this way in NodeArg.type, e.g. 'tensor(float)'.
_ORT_ELEM_NAMES: dict[int, str] = {
    TensorProto.FLOAT: "float", TensorProto.UINT8: "uint8", TensorProto.INT8: "int8",
    TensorProto.UINT16: "uint16", TensorProto.INT16: "int16", TensorProto.INT32: "int32",
    TensorProto.INT64: "int64", TensorProto.STRING: "string", TensorProto.BOOL: "bool",
    TensorProto.FLOAT16: "float16", TensorProto.DOUBLE: "double", TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64", TensorProto.COMPLEX64: "complex64",
    TensorProto.COMPLEX128: "complex128", TensorProto.BFLOAT16: "bfloat16",
    TensorProto.FLOAT8E4M3FN: "float8e4m3fn", TensorProto.FLOAT8E4M3FNUZ: "float8e4m3fnuz",
    TensorProto.FLOAT8E5M2: "float8e5m2", TensorProto.FLOAT8E5M2FNUZ: "float8e5m2fnuz",
    TensorProto.UINT4: "uint4", TensorProto.INT4: "int4",
}
for _name in ("FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"):
    if hasattr(TensorProto, _name):
        _ORT_ELEM_NAMES[getattr(TensorProto, _name)] = _name.lower()


def elem_type_name(elem_type: int) -> str:
    """onnxruntime's name of an ONNX element type, e.g. ``1`` -> ``'float'``."""
    return _ORT_ELEM_NAMES.get(elem_type, TensorProto.DataType.Name(elem_type).lower())


def numpy_dtype(elem_type: int) -> np.dtype:
    """The numpy dtype that holds an ONNX element type (ml_dtypes types for bfloat16, float8, int4)."""
    if elem_type == TensorProto.STRING:
        return np.dtype(object)
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def elem_type_of(dtype: np.dtype) -> int:
    """The ONNX element type of a numpy dtype; object arrays are strings."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(dtype)


@dataclass(frozen=True)
class ValueType:
    """The type of a value: ``kind`` is tensor, sparse_tensor, sequence, optional or map.

    Tensors carry ``elem_type`` and ``shape`` (``None`` when the rank is unknown); sequences and
    optionals carry ``element``; maps carry ``key_type`` and ``element``.
    """

    kind: str
    elem_type: int = 0
    shape: tuple[Dim, ...] | None = None
    element: ValueType | None = None
    key_type: int = 0

    @property
    def dtype(self) -> np.dtype | None:
        """The numpy dtype of a tensor type, or None for other kinds and unknown element types."""
        if self.kind in ("tensor", "sparse_tensor") and self.elem_type:
            return numpy_dtype(self.elem_type)
        return None

    def ort_string(self) -> str:
        """The type as onnxruntime's ``NodeArg.type`` spells it, e.g. ``'tensor(float)'``."""
        if self.kind in ("tensor", "sparse_tensor"):
            return f"{self.kind}({elem_type_name(self.elem_type)})"
        if self.kind == "sequence":
            return f"seq({self.element.ort_string() if self.element else '?'})"
        if self.kind == "optional":
            return f"optional({self.element.ort_string() if self.element else '?'})"
        if self.kind == "map":
            value = self.element.ort_string() if self.element else "?"
            return f"map({elem_type_name(self.key_type)},{value})"
        return self.kind

    @classmethod
    def tensor(cls, elem_type: int, shape: tuple[Dim, ...] | None = None) -> ValueType:
        """A tensor type."""
        return cls("tensor", elem_type=elem_type, shape=shape)

    @classmethod
    def from_proto(cls, tp: onnx.TypeProto) -> ValueType | None:
        """Convert a TypeProto; returns None for an empty (unknown) type."""
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            t = getattr(tp, which)
            shape = None
            if t.HasField("shape"):
                shape = tuple(_dim_from_proto(d) for d in t.shape.dim)
            return cls("tensor" if which == "tensor_type" else "sparse_tensor", t.elem_type, shape)
        if which == "sequence_type":
            return cls("sequence", element=cls.from_proto(tp.sequence_type.elem_type))
        if which == "optional_type":
            return cls("optional", element=cls.from_proto(tp.optional_type.elem_type))
        if which == "map_type":
            return cls("map", key_type=tp.map_type.key_type,
                       element=cls.from_proto(tp.map_type.value_type))
        return None

    def to_proto(self) -> onnx.TypeProto:
        """Convert back to a TypeProto."""
        if self.kind == "tensor":
            return helper.make_tensor_type_proto(self.elem_type, _shape_for_proto(self.shape))
        if self.kind == "sparse_tensor":
            return helper.make_sparse_tensor_type_proto(self.elem_type, _shape_for_proto(self.shape))
        element = self.element.to_proto() if self.element else onnx.TypeProto()
        if self.kind == "sequence":
            return helper.make_sequence_type_proto(element)
        if self.kind == "optional":
            return helper.make_optional_type_proto(element)
        return helper.make_map_type_proto(self.key_type, element)


def _dim_from_proto(d: onnx.TensorShapeProto.Dimension) -> Dim:
    # as onnxruntime reads shapes: a negative size or an empty name is a free dimension; 0 is a size
    if d.HasField("dim_value"):
        return int(d.dim_value) if d.dim_value >= 0 else None
    if d.HasField("dim_param") and d.dim_param:
        return d.dim_param
    return None


def _shape_for_proto(shape: tuple[Dim, ...] | None) -> list[Dim] | None:
    return None if shape is None else list(shape)
