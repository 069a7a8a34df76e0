"""Generated elementwise kernels over broadcast, strided operands (``kernels/elementwise.cl``).

A :class:`Body` says what is computed per element: C statements reading inputs ``x0, x1, ...``
and defining outputs ``y0, y1, ...``. :class:`ElementwiseProgram` turns it into kernels, one per
operand layout: axes are merged where every operand is contiguous across them, and operands dense
over the whole space index with ``gid`` alone. Single ops, fused chains, Transpose, Slice,
Expand, Concat and friends all run through this one generator.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from onnxplug_opencl.engine.dtypes import c_type, pragmas
from onnxplug_opencl.engine.mlas_math import helpers_for
from onnxplug_opencl.errors import OpenCLBuildError
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import render

MAX_RANK = 8
INT32_MAX = 2**31 - 1
#: Fixed kernel names: the source depends only on what is computed, never on node or tensor names,
#: so identical computations share one build (ProgramCache and PoCL's on-disk cache alike).
SCALAR_KERNEL = "elementwise"
VECTOR_KERNEL = "elementwise_vector"


def vector_width(dtype: np.dtype) -> int:
    """Elements per work-item of the vectorised kernels: 8, or 4 for doubles (PoCL 3.0's LLVM 14
    crashes compiling ``exp`` or ``fmax`` on ``double8`` for AVX2 CPUs, whose registers hold 4)."""
    return 4 if np.dtype(dtype) == np.float64 else 8


@dataclass(frozen=True)
class Body:
    """Per-element computation: statements from inputs ``x{i}`` to outputs ``y{j}``.

    ``vector_lines``, when given, are the same statements over vectors of the element type's
    ``vector_width`` (``float8 x0``...), used by the vectorised layout of dense, scalar and
    row-broadcast operands.
    """

    inputs: tuple[np.dtype, ...]
    outputs: tuple[np.dtype, ...]
    lines: tuple[str, ...]
    vector_lines: tuple[str, ...] | None = None

    @functools.cached_property  # read on every launch
    def width(self) -> int:
        """Elements per work-item of the vectorised kernel (one element type for all values)."""
        return vector_width(self.inputs[0] if self.inputs else self.outputs[0])


@dataclass
class View:
    """An operand: an array (buffer), the shape it is read or written with, element strides and offset."""

    array: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @classmethod
    def of(cls, array: Any) -> View:
        """A dense view of a C-contiguous device array."""
        shape = tuple(int(d) for d in array.shape)
        return cls(array, shape, contiguous_strides(shape), 0)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= int(d)
    return tuple(reversed(strides))


def broadcast_view(view: View, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``view``'s strides over the iteration space ``shape`` (numpy broadcasting: 0 on size-1 axes)."""
    pad = len(shape) - len(view.shape)
    if pad < 0:
        raise ValueError(f"operand of shape {view.shape} does not broadcast to {shape}")
    strides = [0] * pad
    for d, s, full in zip(view.shape, view.strides, shape[pad:]):
        if d == full:
            strides.append(s if d != 1 else 0)
        elif d == 1:
            strides.append(0)
        else:
            raise ValueError(f"operand of shape {view.shape} does not broadcast to {shape}")
    return tuple(strides)


def collapse(shape: tuple[int, ...], operands: list[tuple[int, ...]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 axes and merge neighbours every operand walks contiguously."""
    dims: list[int] = []
    strides: list[list[int]] = [[] for _ in operands]
    for axis, d in enumerate(shape):
        if d == 1:
            continue
        if dims and all(st[-1] == op[axis] * d for st, op in zip(strides, operands)):
            dims[-1] *= d
            for st, op in zip(strides, operands):
                st[-1] = op[axis]
            continue
        dims.append(d)
        for st, op in zip(strides, operands):
            st.append(op[axis])
    return dims, strides


class ElementwiseProgram:
    """The kernels of one :class:`Body`, one per operand layout, built on first use and cached."""

    def __init__(self, runtime: ClRuntime, name: str, body: Body) -> None:
        self.runtime = runtime
        #: Readable name for errors and build logs only; it never enters the OpenCL source.
        self.name = name
        self.body = body
        self._kernels: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    def source(self, rank: int, dense: tuple[bool, ...]) -> str:
        """The OpenCL source for operands (inputs then outputs) of which ``dense`` index with gid."""
        b = self.body
        params, loads, stores, index = [], [], [], []
        operands = [("x", i, t, True) for i, t in enumerate(b.inputs)] + \
                   [("y", j, t, False) for j, t in enumerate(b.outputs)]
        for k, ((var, i, t, is_in), full) in enumerate(zip(operands, dense)):
            ptr = f"in{i}" if is_in else f"out{i}"
            qual = "__global const" if is_in else "__global"
            params.append(f"{qual} {c_type(t)}* restrict {ptr}, const int off{k}" + ("" if full else f", const int8 st{k}"))
            index.append(f"    int p{k} = off{k}" + (" + gid;" if full else ";"))
            if is_in:
                loads.append(f"    const {c_type(t)} x{i} = {ptr}[p{k}];")
            else:
                stores.append(f"    {ptr}[p{k}] = ({c_type(t)})(y{i});")
        strided = [k for k, full in enumerate(dense) if not full]
        if strided and rank:
            index.append("    int rem = gid, c;")
            for axis in reversed(range(rank)):
                comp = f"s{axis}"
                index.append(f"    c = rem % dims.{comp}; rem /= dims.{comp};" if axis else "    c = rem;")
                index.extend(f"    p{k} += c * st{k}.{comp};" for k in strided)
        key_types = set(b.inputs) | set(b.outputs)
        prelude = "\n".join(filter(None, (pragmas(key_types), helpers_for(b.lines))))
        return render("elementwise.cl", pragmas=prelude, name=SCALAR_KERNEL,
                      params="".join(", " + p for p in params), index="\n".join(index),
                      loads="\n".join(loads), body="\n".join("    " + line for line in b.lines),
                      stores="\n".join(stores))

    def vector_source(self, kinds: tuple[str, ...]) -> str:
        """The vectorised source; ``kinds`` per operand (inputs then outputs): dense, scalar or row."""
        b = self.body
        w = b.width
        params, vloads, sloads, vstores, sstores = [], [], [], [], []
        types = list(b.inputs) + list(b.outputs)
        for k, (t, kind) in enumerate(zip(types, kinds)):
            ct = c_type(t)
            if k < len(b.inputs):
                params.append(f"__global const {ct}* restrict in{k}, const int off{k}")
                at = {"dense": f"off{k} + base", "row": f"off{k} + base % inner", "scalar": f"off{k}"}[kind]
                sat = {"dense": f"off{k} + gid", "row": f"off{k} + gid % inner", "scalar": f"off{k}"}[kind]
                vload = f"(({ct}{w})(in{k}[{at}]))" if kind == "scalar" else f"VLOAD({ct}, in{k} + {at})"
                vloads.append(f"        const {ct}{w} x{k} = {vload};")
                sloads.append(f"            const {ct} x{k} = in{k}[{sat}];")
            else:
                j = k - len(b.inputs)
                params.append(f"__global {ct}* restrict out{j}, const int off{k}")
                vstores.append(f"        VSTORE({ct}, y{j}, out{j} + off{k} + base);")
                sstores.append(f"            out{j}[off{k} + gid] = ({ct})(y{j});")
        return render("elementwise_vec.cl", pragmas=pragmas(set(types)), name=VECTOR_KERNEL, width=str(w),
                      params="".join(", " + p for p in params), vloads="\n".join(vloads),
                      vbody="\n".join("        " + line for line in b.vector_lines or ()),
                      vstores="\n".join(vstores), sloads="\n".join(sloads),
                      sbody="\n".join("            " + line for line in b.lines), sstores="\n".join(sstores))

    def _vector_kernel(self, kinds: tuple[str, ...]) -> Any | None:
        """The vectorised kernel of ``kinds``, or None when it does not build (scalar variant instead)."""
        key = ("vector", kinds)
        if key not in self._kernels:
            try:
                found = self.runtime.programs.kernel(self.name, self.vector_source(kinds), VECTOR_KERNEL)
            except OpenCLBuildError:
                found = None
            with self._lock:
                self._kernels[key] = found  # type: ignore[index]
        return self._kernels[key]  # type: ignore[index]

    def _vector_kinds(self, dims: list[int], strides: list[list[int]], n_in: int) -> tuple[str, ...] | None:
        """Operand kinds when the vectorised kernel applies to this layout, else None."""
        if self.body.vector_lines is None or len(dims) > 2:
            return None
        dense = list(contiguous_strides(dims))
        inner = dims[-1] if dims else 1
        kinds = []
        for k, st in enumerate(strides):
            if st == dense:
                kinds.append("dense")
            elif all(s == 0 for s in st) and k < n_in:
                kinds.append("scalar")
            elif len(dims) == 2 and st == [0, 1] and inner % self.body.width == 0 and k < n_in:
                kinds.append("row")
            else:
                return None
        return tuple(kinds)

    def kernel(self, rank: int, dense: tuple[bool, ...]) -> Any:
        """The built kernel of one layout."""
        key = (rank, dense)
        found = self._kernels.get(key)
        if found is None:
            with self._lock:
                found = self._kernels.get(key)
                if found is None:
                    found = self.runtime.programs.kernel(self.name, self.source(rank, dense), SCALAR_KERNEL)
                    self._kernels[key] = found
        return found

    def prepare(self, shapes: Sequence[tuple[int, ...]]) -> None:
        """Build now the layout that dense operands of these shapes will use (session creation)."""
        shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        views = [View(None, s, contiguous_strides(s)) for s in shapes]
        outs = [View(None, shape, contiguous_strides(shape)) for _ in self.body.outputs]
        rank, dense, dims, strides = self._layout(shape, views, outs)
        kinds = self._vector_kinds(dims, strides, len(views))
        if kinds is None or self._vector_kernel(kinds) is None:
            self.kernel(rank, dense)

    def _layout(self, shape: tuple[int, ...], inputs: Sequence[View], outputs: Sequence[View]
                ) -> tuple[int, tuple[bool, ...], list[int], list[list[int]]]:
        operands = [broadcast_view(v, shape) for v in inputs] + [broadcast_view(v, shape) for v in outputs]
        dims, strides = collapse(shape, operands)
        if len(dims) > MAX_RANK:
            raise ValueError(f"{self.name}: iteration space {shape} has more than {MAX_RANK} "
                             "non-mergeable axes")
        dense_strides = list(contiguous_strides(dims))
        dense = tuple(st == dense_strides for st in strides)
        return len(dims), dense, dims, strides

    def run(self, shape: Sequence[int], inputs: Sequence[View], outputs: Sequence[View]) -> None:
        """Enqueue the computation over iteration space ``shape``."""
        import pyopencl.cltypes as clt

        shape = tuple(int(d) for d in shape)
        n = math.prod(shape)
        if n == 0:
            return
        if n > INT32_MAX:
            raise OverflowError(f"{self.name}: {n} elements exceed the 32-bit indexing of the kernels")
        rank, dense, dims, strides = self._layout(shape, inputs, outputs)
        kinds = self._vector_kinds(dims, strides, len(inputs))
        vector = self._vector_kernel(kinds) if kinds is not None else None
        i32 = np.int32
        if vector is not None:
            args: list[Any] = [i32(n), i32(dims[-1] if dims else 1)]
            for view in [*inputs, *outputs]:
                args += [view.array.base_data, i32(view.array.offset // view.array.dtype.itemsize + view.offset)]
            self.runtime.launch(vector, (-(-n // self.body.width),), None, *args)
            return
        kernel = self.kernel(rank, dense)
        args = [i32(n), clt.make_int8(*(dims + [1] * (MAX_RANK - len(dims))))]
        for view, st, full in zip([*inputs, *outputs], strides, dense):
            item = view.array.dtype.itemsize
            args += [view.array.base_data, i32(view.array.offset // item + view.offset)]
            if not full:
                args.append(clt.make_int8(*(st + [0] * (MAX_RANK - len(st)))))
        self.runtime.launch(kernel, (n,), None, *args)
