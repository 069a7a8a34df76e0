"""Running a generated elementwise program: compiled once, launched with the arrays' shapes and strides."""

from __future__ import annotations

import math
import threading
from typing import Any, Sequence

import numpy as np
from onnxplug_sdk import errors

from onnxplug_cupy.codegen.elementwise import Program, generate


class ElementwiseShapeError(errors.OnnxplugError, ValueError):
    """The inputs of an elementwise kernel do not broadcast, or have other dtypes than compiled for."""


def element_strides(array: Any, shape: Sequence[int]) -> list[int]:
    """Strides in elements of ``array`` read as ``shape`` (its shape left-padded with 1s); 0 where
    the array has size 1, so a broadcast axis always reads the same element."""
    rank = len(shape)
    own = [1] * (rank - array.ndim) + list(array.shape)
    strides = [0] * (rank - array.ndim) + [s // array.itemsize for s in array.strides]
    return [0 if size == 1 else stride for size, stride in zip(own, strides)]


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a C-contiguous array of ``shape``."""
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= max(int(size), 1)
    return out[::-1]


class ElementwiseRunner:
    """One program compiled for the backend; ``runner(*arrays)`` returns the exported values.

    Must be called inside ``backend.scope()``. ``rank``: the rank to compile the strided kernel for
    now (session creation); other ranks are compiled when first met.
    """

    def __init__(self, backend: Any, program: Program, rank: int | None, label: str) -> None:
        self.backend = backend
        self.program = program
        self.label = label
        self._kernels: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._compile(rank if rank is not None else 4)

    def _compile(self, rank: int) -> tuple[Any, Any]:
        with self._lock:
            found = self._kernels.get(rank)
            if found is None:
                source = generate(self.program, rank)
                kernels = self.backend.compile(source.source, [source.flat, source.strided], self.label)
                found = self._kernels[rank] = (kernels[source.flat], kernels[source.strided])
        return found

    def _shapes(self, arrays: Sequence[Any]) -> dict[str, tuple[int, ...]]:
        program = self.program
        shapes: dict[str, tuple[int, ...]] = {}
        for name, dtype, array in zip(program.inputs, program.input_dtypes, arrays):
            if array.dtype.name != dtype:
                raise ElementwiseShapeError(f"{self.label}: input {name!r} is {array.dtype.name}, "
                                            f"the kernel was compiled for {dtype}")
            shapes[name] = tuple(array.shape)
        for step in program.steps:
            args = [shapes[a] for a in step.args if a is not None]
            try:
                shapes[step.out] = tuple(np.broadcast_shapes(*args))
            except ValueError:
                raise ElementwiseShapeError(f"{self.label}: {step.op} cannot broadcast shapes "
                                            f"{', '.join(str(list(s)) for s in args)}") from None
        return shapes

    def __call__(self, *arrays: Any) -> list[Any]:
        program = self.program
        if len(arrays) != len(program.inputs):
            raise ElementwiseShapeError(f"{self.label}: expected {len(program.inputs)} inputs, got {len(arrays)}")
        shapes = self._shapes(arrays)
        space = tuple(np.broadcast_shapes(*shapes.values()))
        xp = self.backend.xp
        outputs = [xp.empty(shapes[o], dtype=np.dtype(d)) for o, d in zip(program.outputs, program.output_dtypes)]
        n = math.prod(space)
        if n == 0:
            return outputs
        flat = all(a.shape == space and a.flags.c_contiguous for a in arrays) and \
            all(o.shape == space for o in outputs)
        if flat:
            kernel = next(iter(self._kernels.values()))[0] if self._kernels else self._compile(len(space))[0]
            self.backend.launch(kernel, n, [*arrays, *outputs, np.int64(n)])
            return outputs
        rank = len(space)
        strided = self._kernels.get(rank) or self._compile(rank)
        ints: list[int] = list(space)
        for a in arrays:
            ints += element_strides(a, space)
        for o in outputs:
            ints += contiguous_strides([1] * (rank - o.ndim) + list(o.shape))
        for o in outputs:
            own = [1] * (rank - o.ndim) + list(o.shape)
            ints += [1 if size == 1 and full != 1 else 0 for size, full in zip(own, space)]
        self.backend.launch(strided[1], n, [*arrays, *outputs, np.int64(n), *(np.int64(v) for v in ints)])
        return outputs
