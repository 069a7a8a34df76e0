"""Reductions, softmax and normalisation launchers over [outer][R][inner] views.

Reduced axes that are not adjacent are first brought together by a transposing copy, so every
kernel only ever sees one contiguous reduced axis.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from onnxplug_opencl.engine import movement
from onnxplug_opencl.engine.dtypes import FLOATS, c_type, pragmas
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import kernel_source

REDUCE_OPS = {"ReduceSum": 0, "ReduceMean": 1, "ReduceMax": 2, "ReduceMin": 3, "ReduceProd": 4,
              "ReduceL1": 5, "ReduceL2": 6, "ReduceLogSum": 7, "ReduceLogSumExp": 8, "ReduceSumSquare": 9,
              "ArgMax": 10, "ArgMin": 11}


def _init(op: int, dtype: np.dtype) -> str:
    if op in (2, 3) and dtype == np.bool_:
        return "0" if op == 2 else "1"
    if op in (2, 3):
        if dtype in FLOATS:
            return "(-INFINITY)" if op == 2 else "INFINITY"
        info = np.iinfo(dtype)
        return f"(({c_type(dtype)}){info.min if op == 2 else info.max})"
    return "1" if op == 4 else "0"


def _acc(dtype: np.dtype) -> str:
    if dtype in FLOATS:
        return "double" if dtype == np.float64 else "float"
    return "long" if dtype.kind == "i" else "ulong"


def as_outer_r_inner(runtime: ClRuntime, x: Any, axes: Sequence[int]) -> tuple[Any, int, int, int]:
    """``x`` (copied if needed) with ``axes`` adjacent, and its (outer, R, inner) sizes."""
    rank = x.ndim
    axes = sorted(set(axes))
    shape = [int(d) for d in x.shape]
    if axes and axes != list(range(axes[0], axes[-1] + 1)):
        keep = [a for a in range(rank) if a not in axes]
        x = movement.transpose(runtime, x, keep + axes)
        shape = [shape[a] for a in keep + axes]
        axes = list(range(len(keep), rank))
    if not axes:
        return x, int(np.prod(shape)), 1, 1
    outer = int(np.prod(shape[:axes[0]]))
    r = int(np.prod(shape[axes[0]:axes[-1] + 1]))
    inner = int(np.prod(shape[axes[-1] + 1:]))
    return x, outer, r, inner


def reduce(runtime: ClRuntime, x: Any, axes: Sequence[int], op: str, *, select_last: bool = False) -> Any:
    """Reduce ``x`` over ``axes``; returns the flat [outer*inner] result (the caller reshapes)."""
    code = REDUCE_OPS[op]
    dtype = np.dtype(x.dtype)
    x, outer, r, inner = as_outer_r_inner(runtime, x, axes)
    out_dtype = np.dtype(np.int64) if code >= 10 else dtype
    out = runtime.empty((outer * inner,), out_dtype)
    if out.size == 0:
        return out
    if r == 0 and code >= 10:
        raise ValueError(f"{op} over an empty axis has no index to return")
    isnan = "isnan(v)" if dtype in FLOATS else "0"
    options = [f"-DT={c_type(dtype)}", f"-DACC={_acc(dtype)}", f"-DOUT={c_type(out_dtype)}", f"-DOP={code}",
               f"-DINIT={_init(code, dtype)}", f"-DLAST={int(select_last)}", f"-Disnan_acc(v)={isnan}"]
    source = pragmas({dtype}) + "\n" + kernel_source("reduce.cl")
    kernel = runtime.programs.kernel("reduce.cl", source, "reduce", options)
    i32 = np.int32
    runtime.launch(kernel, (int(out.size),), None, i32(out.size), i32(r), i32(inner), x.base_data,
                   i32(x.offset // dtype.itemsize), out.base_data)
    return out


def softmax(runtime: ClRuntime, x: Any, outer: int, r: int, inner: int, mode: int) -> Any:
    """Softmax (0), LogSoftmax (1) or Hardmax (2) of x viewed as [outer][r][inner]."""
    dtype = np.dtype(x.dtype)
    out = runtime.empty(tuple(x.shape), dtype)
    if out.size == 0:
        return out
    source = pragmas({dtype}) + "\n" + kernel_source("softmax.cl")
    options = [f"-DT={c_type(dtype)}", f"-DVEC={c_type(dtype)}8", f"-DMODE={mode}"]
    i32 = np.int32
    # not for doubles: PoCL 3.0's LLVM 14 crashes compiling fmax and exp on double8 for AVX2 CPUs
    if inner == 1 and r % 8 == 0 and r and mode != 2 and dtype != np.float64:
        kernel = runtime.programs.kernel("softmax.cl", source, "softmax_rows8", options)
        runtime.launch(kernel, (outer,), None, i32(outer), i32(r), x.base_data, i32(x.offset // dtype.itemsize),
                       out.base_data)
        return out
    kernel = runtime.programs.kernel("softmax.cl", source, "softmax", options)
    runtime.launch(kernel, (outer * inner,), None, i32(outer * inner), i32(r), i32(inner), x.base_data,
                   i32(x.offset // dtype.itemsize), out.base_data)
    return out


def normalize(runtime: ClRuntime, x: Any, rows: int, r: int, scale: Any, bias: Any, eps: float, *,
              channels: int = 0, stats: bool = False, acc: np.dtype | None = None) -> tuple[Any, Any, Any]:
    """Normalise each of ``rows`` rows of ``r`` elements; per-channel scale when ``channels``."""
    dtype = np.dtype(x.dtype)
    acc = np.dtype(acc or (np.float64 if dtype == np.float64 else np.float32))
    y = runtime.empty(tuple(x.shape), dtype)
    mean = runtime.empty((rows,), dtype) if stats else None
    inv = runtime.empty((rows,), dtype) if stats else None
    if y.size == 0 and not stats:
        return y, mean, inv
    options = [f"-DT={c_type(dtype)}", f"-DACC={c_type(acc)}", f"-DHAS_BIAS={int(bias is not None)}",
               f"-DWANT_STATS={int(stats)}"]
    if channels:
        options.append("-DPER_ROW_SCALE")
    source = pragmas({dtype, acc}) + "\n" + kernel_source("norm.cl")
    kernel = runtime.programs.kernel("norm.cl", source, "norm", options)
    i32, item = np.int32, dtype.itemsize
    b = bias if bias is not None else scale
    runtime.launch(kernel, (rows,), None, i32(rows), i32(r), i32(max(channels, 1)), acc.type(eps),
                   x.base_data, i32(x.offset // item), scale.base_data, i32(scale.offset // item),
                   b.base_data, i32(b.offset // item), y.base_data,
                   (mean if stats else y).base_data, (inv if stats else y).base_data)
    return y, mean, inv
