"""Data movement on the device: views, strided copies, transpose, slice, concat, expand, gather, fill.

Copies only move bytes, so they run through one generated copy kernel per element size (the
elementwise generator with an identity body); Gather and fills have kernels of their own.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from onnxplug_opencl.engine.dtypes import COPY_TYPES, c_type
from onnxplug_opencl.engine.elementwise import Body, ElementwiseProgram, View, contiguous_strides
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import kernel_source

_COPY_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
_programs: dict[tuple[int, int], ElementwiseProgram] = {}
_lock = threading.Lock()


def copy_program(runtime: ClRuntime, itemsize: int) -> ElementwiseProgram:
    """The strided copy kernel family for elements of ``itemsize`` bytes."""
    key = (id(runtime), itemsize)
    with _lock:
        found = _programs.get(key)
        if found is None:
            dt = _COPY_DTYPES[itemsize]
            body = Body((dt,), (dt,), (f"const {COPY_TYPES[itemsize]} y0 = x0;",))
            found = _programs[key] = ElementwiseProgram(runtime, f"copy_{itemsize}", body)
        return found


def alias(runtime: ClRuntime, array: Any, shape: Sequence[int]) -> Any:
    """A new array object of ``shape`` over the same (contiguous) buffer: Reshape, Squeeze, Flatten."""
    import pyopencl.array as cla

    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape)) != array.size:
        raise ValueError(f"cannot view {array.size} elements as shape {list(shape)}")
    if array.size == 0:
        return runtime.empty(shape, array.dtype)
    return cla.Array(runtime.queue, shape, array.dtype, data=array.base_data, offset=array.offset)


def strided_copy(runtime: ClRuntime, src: View, dst: View, shape: Sequence[int]) -> None:
    """Copy ``src`` into ``dst`` over iteration space ``shape`` (both views broadcast to it)."""
    copy_program(runtime, src.array.dtype.itemsize).run(tuple(shape), [src], [dst])


def transpose(runtime: ClRuntime, array: Any, perm: Sequence[int]) -> Any:
    """``array`` with its axes permuted, as a new contiguous array."""
    shape = tuple(array.shape)
    strides = contiguous_strides(shape)
    out_shape = tuple(shape[p] for p in perm)
    out = runtime.empty(out_shape, array.dtype)
    strided_copy(runtime, View(array, out_shape, tuple(strides[p] for p in perm)), View.of(out), out_shape)
    return out


def slice_view(array: Any, starts: Sequence[int], steps: Sequence[int], out_shape: Sequence[int]) -> View:
    """A strided view of ``array`` starting at ``starts`` (per axis) with ``steps`` (may be negative)."""
    strides = contiguous_strides(tuple(array.shape))
    offset = sum(int(s) * st for s, st in zip(starts, strides))
    return View(array, tuple(int(d) for d in out_shape), tuple(int(s) * st for s, st in zip(steps, strides)), offset)


def copy_view(runtime: ClRuntime, view: View) -> Any:
    """Materialise a view as a new contiguous array."""
    out = runtime.empty(view.shape, view.array.dtype)
    strided_copy(runtime, view, View.of(out), view.shape)
    return out


def concat(runtime: ClRuntime, arrays: Sequence[Any], axis: int) -> Any:
    """Join arrays along ``axis``."""
    first = arrays[0]
    shape = list(first.shape)
    shape[axis] = sum(int(a.shape[axis]) for a in arrays)
    out = runtime.empty(tuple(shape), first.dtype)
    out_strides = contiguous_strides(tuple(shape))
    start = 0
    for a in arrays:
        part = tuple(int(d) for d in a.shape)
        if a.size:
            strided_copy(runtime, View.of(a), View(out, part, out_strides, start * out_strides[axis]), part)
        start += part[axis]
    return out


def expand(runtime: ClRuntime, array: Any, shape: Sequence[int]) -> Any:
    """``array`` broadcast to ``shape``, as a new array."""
    shape = tuple(int(d) for d in shape)
    out = runtime.empty(shape, array.dtype)
    strided_copy(runtime, View.of(array), View.of(out), shape)
    return out


def fill(runtime: ClRuntime, shape: Sequence[int], dtype: np.dtype, value: Any) -> Any:
    """A new array of ``shape`` filled with ``value``."""
    import pyopencl as cl

    out = runtime.empty(tuple(int(d) for d in shape), dtype)
    if out.size:
        pattern = np.asarray(value, dtype=dtype).reshape(1)
        cl.enqueue_fill_buffer(runtime.queue, out.base_data, pattern, out.offset, out.nbytes)
    return out


def gather(runtime: ClRuntime, data: Any, indices: Any, axis: int) -> Any:
    """ONNX Gather: ``data`` indexed along ``axis`` by ``indices`` (negative indices count from the end)."""
    shape = tuple(int(d) for d in data.shape)
    inner = int(np.prod(shape[axis + 1:]))
    out_shape = shape[:axis] + tuple(int(d) for d in indices.shape) + shape[axis + 1:]
    out = runtime.empty(out_shape, data.dtype)
    n_idx = int(indices.size)
    if out.size == 0:
        return out
    itype = c_type(indices.dtype)
    source = kernel_source("gather.cl")
    kernel = runtime.programs.kernel("gather.cl", source, "gather",
                                     [f"-DT={COPY_TYPES[data.dtype.itemsize]}", f"-DI={itype}"])
    i32 = np.int32
    item, iitem = data.dtype.itemsize, indices.dtype.itemsize
    runtime.launch(kernel, (int(out.size),), None, i32(out.size), i32(n_idx), i32(inner), i32(shape[axis]),
                   data.base_data, i32(data.offset // item), indices.base_data, i32(indices.offset // iitem),
                   out.base_data, i32(out.offset // item))
    return out

