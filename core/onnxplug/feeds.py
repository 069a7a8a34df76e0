"""Feeds as onnxruntime's ``InferenceSession.run`` takes them, checked against the declared inputs.

Taken, as onnxruntime takes them: numpy arrays of exactly the declared element type (no implicit
cast; any strides and byte order, copied to C order and native order where needed); lists, nested
or not, converted by numpy to the declared element type (``[1.5, 2.7]`` for int64 truncates, a
ragged list fails; for a string input each element becomes ``str(element)``);
:class:`~onnxplug.OrtValue` (a device value is copied to the host); ``None`` or no feed for an
optional input. Refused, as onnxruntime refuses them: Python and numpy scalars (a 0-d array is the
way), tuples and any other object. Rank and fixed sizes must match the declared shape, except that a
declared rank of 0 takes any shape, as in onnxruntime. Sequence and map inputs are passed as given.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from onnx import TensorProto

from onnxplug.errors import InputShapeError, InputTypeError, InvalidInputError, MissingInputError, UnknownInputError
from onnxplug.ir import ValueType, elem_type_of, numpy_dtype
from onnxplug.ort_value import OrtValue


def check_feeds(src: str, input_types: Mapping[str, ValueType | None], defaults: Mapping[str, Any],
                input_feed: Any) -> dict[str, Any]:
    """The feeds of one run by input name: ``input_feed`` checked and converted, overridable
    initializers that were not fed taken from ``defaults``."""
    if type(input_feed) is not dict and not isinstance(input_feed, Mapping):  # (typing's check is slow)
        raise InvalidInputError(f"input_feed must be a dict of input name to value, not {type(input_feed).__name__}")
    for name in input_feed:
        if name not in input_types:
            raise UnknownInputError(f"model {src}: {name!r} is not an input of the model "
                                    f"(inputs: {', '.join(input_types)})")
    feeds: dict[str, Any] = {}
    for name, declared in input_types.items():
        if name in input_feed:
            value = input_feed[name]
            feeds[name] = check_value(src, name, value._host() if isinstance(value, OrtValue) else value, declared)
        elif name in defaults:
            feeds[name] = defaults[name]
        elif declared is not None and declared.kind == "optional":
            feeds[name] = None  # onnxruntime runs an optional input that was not fed as absent
        else:
            raise MissingInputError(f"model {src}: required input {name!r} was not fed "
                                    f"(expected {describe_type(declared)})")
    return feeds


def describe_type(t: ValueType | None) -> str:
    """A declared type for messages, e.g. ``tensor(float) with shape ['N', 3]``."""
    if t is None:
        return "a value of unknown type"
    if t.kind == "tensor":
        shape = "?" if t.shape is None else str([d if d is not None else "?" for d in t.shape])
        return f"{t.ort_string()} with shape {shape}"
    return t.ort_string()


def check_value(src: str, name: str, value: Any, declared: ValueType | None) -> Any:
    """One host feed as the kernels take it: a C-ordered numpy array of the declared element type
    for a tensor input (strings as ``str`` objects), or a typed error naming the input."""
    if type(value) is np.ndarray and declared is not None and declared.kind == "tensor" and value.flags.c_contiguous:
        # the common feed, a C-ordered array of the declared numeric dtype in native order: only
        # the shape to check (the general path below returns such an array as it is, too)
        want = _NUMERIC_DTYPES.get(declared.elem_type)
        if want is None:
            want = _NUMERIC_DTYPES.setdefault(declared.elem_type, _numeric_dtype(declared.elem_type))
        if want is not False and value.dtype == want and value.dtype.isnative:
            _check_shape(src, name, value.shape, declared)
            return value
    if declared is not None and declared.kind == "optional" and declared.element is not None:
        return None if value is None else check_value(src, name, value, declared.element)
    if declared is None or declared.kind != "tensor" or not declared.elem_type:
        return value
    if isinstance(value, list):
        value = _from_list(src, name, value, declared)
    elif not isinstance(value, np.ndarray):
        raise InputTypeError(f"model {src}: input {name!r} expects a numpy array or a list "
                             f"({describe_type(declared)}), got {_kind(value)}")
    if not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    try:
        got = elem_type_of(value.dtype)
    except (KeyError, TypeError, ValueError):
        got = -1
    if got != declared.elem_type:
        raise InputTypeError(f"model {src}: input {name!r} expects {describe_type(declared)}, "
                             f"got tensor({value.dtype}) with shape {list(value.shape)}")
    _check_shape(src, name, value.shape, declared)
    if got == TensorProto.STRING:
        return _strings(src, name, value)
    value = np.asarray(value)  # subclasses (np.matrix, masked arrays) as plain arrays, as onnxruntime reads them
    return value if value.flags.c_contiguous else value.copy(order="C")


#: ONNX element type -> its numpy dtype, or False where the fast path does not apply; filled as feeds arrive.
_NUMERIC_DTYPES: dict[int, np.dtype | bool] = {}


def _numeric_dtype(elem_type: int) -> np.dtype | bool:
    """The dtype whose arrays check_value returns as they are: not strings, and one that maps back to
    ``elem_type`` (so the general path would accept it too); False otherwise."""
    if not elem_type or elem_type == TensorProto.STRING:
        return False
    try:
        dtype = numpy_dtype(elem_type)
        return dtype if elem_type_of(dtype) == elem_type and dtype.kind not in "OUS" else False
    except (KeyError, TypeError, ValueError):
        return False


def _kind(value: Any) -> str:
    if isinstance(value, tuple):
        return "a tuple (onnxruntime takes lists, not tuples)"
    if isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return (f"a scalar {type(value).__name__} (onnxruntime takes no scalars either: "
                f"pass a 0-d array, np.array(value, dtype=...))")
    return f"a {type(value).__name__}"


def _from_list(src: str, name: str, value: list, declared: ValueType) -> np.ndarray:
    """A list as onnxruntime converts it: numpy's conversion to the declared element type."""
    try:
        if declared.elem_type == TensorProto.STRING:
            return np.array(value, dtype=object)
        return np.array(value, dtype=declared.dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise InputTypeError(f"model {src}: input {name!r}: the list given cannot be made into "
                             f"{describe_type(declared)}: {e}") from None


def _strings(src: str, name: str, value: np.ndarray) -> np.ndarray:
    """A string tensor as ``str`` objects: onnxruntime's ``str(element)`` for objects of other
    types; bytes arrays (``dtype='S'``) decoded from UTF-8."""
    if value.dtype.kind == "S":
        try:
            return np.char.decode(value, "utf-8").astype(object)
        except UnicodeDecodeError as e:
            raise InputTypeError(f"model {src}: input {name!r}: a bytes array that is not UTF-8 text: {e}") from None
    value = np.asarray(value)
    if value.dtype.kind == "U":
        return value.astype(object, order="C")
    if all(type(element) is str for element in value.flat):
        return value if value.flags.c_contiguous else value.copy(order="C")
    strings = value.astype(object, order="C")  # a copy: the caller's array stays as it was
    flat = strings.reshape(-1)
    for i, element in enumerate(flat):
        if type(element) is not str:
            flat[i] = str(element)
    return strings


def _check_shape(src: str, name: str, shape: tuple[int, ...], declared: ValueType) -> None:
    if not declared.shape:  # unknown rank, or rank 0, which onnxruntime does not check either
        return
    if len(shape) != len(declared.shape):
        raise InputShapeError(f"model {src}: input {name!r} expects rank {len(declared.shape)} "
                              f"({describe_type(declared)}), got rank {len(shape)} with shape {list(shape)}")
    for axis, (want, have) in enumerate(zip(declared.shape, shape)):
        if isinstance(want, int) and want != have:
            raise InputShapeError(f"model {src}: input {name!r} expects dimension {axis} to be "
                                  f"{want} ({describe_type(declared)}), got shape {list(shape)}")
