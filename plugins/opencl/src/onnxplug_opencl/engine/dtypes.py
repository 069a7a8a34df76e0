"""Element types: numpy dtypes and the OpenCL C types that hold them, per device capability."""

from __future__ import annotations

import numpy as np

from onnxplug_opencl.runtime.devices import DeviceEntry

#: numpy dtype -> OpenCL C type. Booleans are stored as uchar 0/1, as numpy stores them.
C_TYPES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "uchar", np.dtype(np.int8): "char", np.dtype(np.uint8): "uchar",
    np.dtype(np.int16): "short", np.dtype(np.uint16): "ushort", np.dtype(np.int32): "int",
    np.dtype(np.uint32): "uint", np.dtype(np.int64): "long", np.dtype(np.uint64): "ulong",
    np.dtype(np.float16): "half", np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}
FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
SIGNED = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED = frozenset(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
INTEGERS = SIGNED | UNSIGNED
BOOL = np.dtype(np.bool_)
#: Copies only move bytes, so they run on the unsigned type of the element's size.
COPY_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def c_type(dtype: np.dtype) -> str:
    """The OpenCL C type of ``dtype``; KeyError for types no device holds (strings, complex, bfloat16)."""
    return C_TYPES[np.dtype(dtype)]


def device_supports(entry: DeviceEntry, dtype: np.dtype | None) -> bool:
    """Whether kernels on ``entry`` may compute in ``dtype`` (fp16/fp64 need the device extension)."""
    if dtype is None:
        return False
    dtype = np.dtype(dtype)
    if dtype not in C_TYPES:
        return False
    if dtype == np.float16:
        return entry.fp16
    if dtype == np.float64:
        return entry.fp64
    return True


def pragmas(dtypes: set[np.dtype] | list[np.dtype]) -> str:
    """Extension pragmas a source using ``dtypes`` needs."""
    lines = []
    if np.dtype(np.float64) in set(dtypes):
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if np.dtype(np.float16) in set(dtypes):
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    return "\n".join(lines)
