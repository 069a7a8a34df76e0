"""Output types of ``ai.onnx.ml`` ops that an attribute or an input's kind chooses, as the ONNX-ML
spec and onnxruntime give them: a classifier's label is int64 unless ``classlabels_strings`` is
set, CastMap's output follows ``cast_to``, LabelEncoder's the ``values_*`` attribute it has,
CategoryMapper's is the other of string and int64, and DictVectorizer's the map's value type.
Outputs with one allowed type, or that share the input's type parameter (scores, regressors,
Scaler, Normalizer, Binarizer, ...), are typed from the op's schema by
:mod:`onnxplug.ir.element_types`; ZipMap's sequence of maps is left to onnx shape inference.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from onnx import TensorProto

from onnxplug.ir.graph import Node
from onnxplug.ir.types import ValueType, elem_type_of

ML_DOMAIN = "ai.onnx.ml"

_STRING, _INT64, _FLOAT = TensorProto.STRING, TensorProto.INT64, TensorProto.FLOAT
#: Classifiers whose output 0 is the predicted label.
_CLASSIFIERS = frozenset({"TreeEnsembleClassifier", "LinearClassifier", "SVMClassifier"})
_CAST_TO = {"TO_FLOAT": _FLOAT, "TO_STRING": _STRING, "TO_INT64": _INT64}
#: LabelEncoder (opset 2 and later): the list attribute holding the values, and its type.
_VALUE_LISTS = {"values_strings": _STRING, "values_int64s": _INT64, "values_floats": _FLOAT}


def ml_output_types(node: Node, type_of: Callable[[str], ValueType | None]) -> dict[int, int]:
    """Output index -> element type of an ``ai.onnx.ml`` node's tensor outputs whose type its
    attributes or an input's type choose; outputs whose type is uncertain are absent. ``type_of``
    gives a value's known type."""
    op = node.op_type
    if op in _CLASSIFIERS:
        return {0: _STRING if _present(node, "classlabels_strings") else _INT64}
    if op == "CastMap":
        elem = _CAST_TO.get(_text(node.attr("cast_to", "TO_FLOAT")))
        return {0: elem} if elem else {}
    if op == "LabelEncoder":
        return _label_encoder(node, type_of)
    if op == "CategoryMapper":
        elem = _input_elem(node, type_of)
        return {0: _INT64 if elem == _STRING else _STRING} if elem in (_STRING, _INT64) else {}
    if op == "DictVectorizer":
        t = type_of(node.inputs[0]) if node.inputs else None
        if t is not None and t.kind == "map" and t.element is not None and t.element.kind == "tensor":
            return {0: t.element.elem_type} if t.element.elem_type else {}
    return {}


def _label_encoder(node: Node, type_of: Callable[[str], ValueType | None]) -> dict[int, int]:
    if node.opset and node.opset < 2:  # string -> int64 or int64 -> string
        elem = _input_elem(node, type_of)
        return {0: _INT64 if elem == _STRING else _STRING} if elem in (_STRING, _INT64) else {}
    found = {elem for name, elem in _VALUE_LISTS.items() if _present(node, name)}
    values = node.attr("values_tensor")
    if values is not None:
        found.add(elem_type_of(np.asarray(values).dtype))
    return {0: found.pop()} if len(found) == 1 else {}


def _present(node: Node, name: str) -> bool:
    value = node.attr(name)
    return value is not None and len(value) > 0


def _text(value: object) -> object:
    return value.decode() if isinstance(value, bytes) else value


def _input_elem(node: Node, type_of: Callable[[str], ValueType | None]) -> int:
    t = type_of(node.inputs[0]) if node.inputs else None
    return t.elem_type if t is not None and t.kind == "tensor" else 0
