"""numpy dtypes as CUDA C types and literals."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk.elementwise import BOOL, FLOATS, INTS, NUMERIC, SIGNED, UNSIGNED, c_function

__all__ = ["ALL", "BOOL", "C_TYPES", "FLOATS", "INTS", "NUMERIC", "SIGNED", "UNSIGNED", "c_type", "dtype_name",
           "literal", "math_fn"]

#: numpy dtype name -> CUDA C type of the generated kernels (float16 is computed by upcasting).
C_TYPES: dict[str, str] = {
    "bool": "bool",
    "int8": "signed char", "uint8": "unsigned char",
    "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long",
    "float32": "float", "float64": "double",
}

ALL = NUMERIC | BOOL


def dtype_name(dtype: Any) -> str:
    """The numpy name of ``dtype`` (a dtype, scalar type or name)."""
    return np.dtype(dtype).name


def c_type(dtype: Any) -> str:
    """The CUDA C type of a dtype the generator supports; KeyError otherwise."""
    return C_TYPES[dtype_name(dtype)]


def literal(value: float | int | bool, dtype: str) -> str:
    """A C expression of type ``dtype`` for ``value``; infinities and NaN are written by bit pattern,
    since NVRTC has no ``INFINITY`` macro without headers."""
    t = C_TYPES[dtype]
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in INTS:
        return f"(({t}){int(value)}LL)" if dtype in SIGNED else f"(({t}){int(value)}ULL)"
    v = float(value)
    if math.isnan(v):
        return ("__int_as_float(0x7fc00000)" if dtype == "float32"
                else "__longlong_as_double((long long)0x7ff8000000000000ULL)")
    if math.isinf(v):
        if dtype == "float32":
            return "__int_as_float(0x7f800000)" if v > 0 else "__int_as_float((int)0xff800000U)"
        return ("__longlong_as_double((long long)0x7ff0000000000000ULL)" if v > 0
                else "__longlong_as_double((long long)0xfff0000000000000ULL)")
    return f"(({t}){v!r})"


def math_fn(name: str, dtype: str) -> str:
    """The C math function ``name`` for ``dtype``: ``expf`` for float32, ``exp`` for float64."""
    return c_function(name, dtype, suffixed=True)
