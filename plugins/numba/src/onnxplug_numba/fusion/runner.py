"""Running an elementwise program: broadcasting, axis coalescing and picking the compiled variant."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

import math

import numpy as np

from onnxplug_numba.fusion import cache, calls, codegen
from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.calls import Call
from onnxplug_numba.fusion.numpy_path import numpy_call
from onnxplug_numba.fusion.ops import relative_cost
from onnxplug_numba.kernels import native_parallel
from onnxplug_numba.threads import PARALLEL_MIN_ELEMENTS, ThreadControl


@dataclass(frozen=True)
class Layout:
    """How one call walks its operands: loop shape, per-input strides and innermost kinds."""

    out_shape: tuple[int, ...]
    mode: str
    kinds: tuple[str, ...]
    shape: np.ndarray  # coalesced output shape (nd mode)
    strides: tuple[np.ndarray, ...]  # per input, element strides over the coalesced shape


def _element_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """Strides (in elements) of a C-contiguous ``shape`` broadcast to ``out_shape``."""
    rank = len(out_shape)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    strides = [0] * rank
    step = 1
    for d in range(rank - 1, -1, -1):
        strides[d] = 0 if padded[d] == 1 else step
        step *= padded[d]
    return strides


def plan_layout(shapes: Sequence[tuple[int, ...]], out_shape: tuple[int, ...]) -> Layout:
    """Coalesce axes that every operand walks contiguously, then choose the loop shape."""
    per_input = [_element_strides(s, out_shape) for s in shapes]
    dims = [d for d in range(len(out_shape)) if out_shape[d] != 1]
    merged_shape: list[int] = []
    merged: list[list[int]] = [[] for _ in shapes]
    for d in dims:
        if merged_shape and all(st[d] * out_shape[d] == m[-1] for st, m in zip(per_input, merged)):
            merged_shape[-1] *= out_shape[d]
            for st, m in zip(per_input, merged):
                m[-1] = st[d]
            continue
        merged_shape.append(out_shape[d])
        for st, m in zip(per_input, merged):
            m.append(st[d])
    if not merged_shape:
        merged_shape = [1]
        merged = [[0] for _ in shapes]
    inner = [m[-1] for m in merged]
    if len(merged_shape) == 1 and all(s in (0, 1) for s in inner):
        kinds = tuple("c" if s == 1 else "z" for s in inner)
        mode = "flat"
    else:
        kinds = tuple("c" if s == 1 else ("z" if s == 0 else "g") for s in inner)
        mode = "nd"
    return Layout(tuple(out_shape), mode, kinds, np.array(merged_shape, dtype=np.int64),
                  tuple(np.array(m, dtype=np.int64) for m in merged))


class ElementwiseRunner:
    """Computes a :class:`Program` on arrays with one compiled numba loop per call.

    ``returned`` lists which program outputs a call returns, in order (one may repeat: a chain
    output that is an Identity copy of another); by default all of them.
    """

    def __init__(self, program: Program, threads: ThreadControl, returned: Sequence[int] | None = None) -> None:
        self.program = program
        self.threads = threads
        self.returned = None if returned is None else tuple(returned)
        self._layouts: dict[tuple[tuple[int, ...], ...], Layout] = {}
        self._calls: dict[tuple[Any, ...], Call] = {}
        self._kernels: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._lock = threading.Lock()
        self._out_dtypes = [np.dtype(d) for d in program.output_dtypes()]
        self._dispatch = calls.dispatcher(len(program.inputs), self._calls, self._first_call)

    def module(self, mode: str, kinds: tuple[str, ...]) -> Any:
        """The generated module for one loop shape (written, imported and memoised once)."""
        key = (mode, kinds)
        module = self._kernels.get(key)
        if module is None:
            with self._lock:
                module = self._kernels.get(key)
                if module is None:
                    module = cache.module_for(codegen.generate(self.program, mode, kinds))
                    self._kernels[key] = module
        return module

    def warm(self, shapes: Sequence[tuple[int, ...]]) -> None:
        """Compile (or load from the disk cache) the loop a call with ``shapes`` would use."""
        self(*[np.zeros(s, dtype=d) for s, d in zip(shapes, self.program.input_dtypes)])

    def _layout(self, shapes: list[tuple[int, ...]]) -> Layout:
        key = tuple(shapes)
        layout = self._layouts.get(key)
        if layout is None:
            layout = plan_layout(shapes, tuple(np.broadcast_shapes(*shapes)))
            self._layouts[key] = layout
        return layout

    def call_for(self, shapes: tuple[tuple[int, ...], ...]) -> Call:
        """The call plan for inputs of these shapes, worked out on the first call and memoised."""
        call = self._calls.get(shapes)
        if call is None:
            call = self._calls[shapes] = self._make_call(shapes)
        return call

    def _make_call(self, shapes: tuple[tuple[int, ...], ...]) -> Call:
        """A function of the input arrays that runs the compiled loop: the layout, output shape,
        extent, grain and stride arrays are bound once here, so a call does no planning."""
        layout = self._layout(list(shapes))
        out_shape, dtypes, returned = layout.out_shape, tuple(self._out_dtypes), self.returned
        tiny = numpy_call(self.program, out_shape)
        if tiny is not None and returned is None:
            return tiny
        module = self.module(layout.mode, layout.kinds)
        kernel = module.kernel
        # transcendental chains (Gelu, Tanh...) are worth sharing from fewer elements than Adds
        min_elements = max(1, PARALLEL_MIN_ELEMENTS // relative_cost(self.program.steps))
        if layout.mode == "flat":
            total = int(layout.shape[0]) if layout.out_shape else 1
            grain = min_elements
        else:
            inner = max(1, int(layout.shape[-1]))
            total = int(math.prod(layout.shape[:-1]))
            grain = max(1, min_elements // inner)
        if total > 0 and (not self.threads.parallel or total < 2 * grain):
            nd = None if layout.mode == "flat" else (layout.shape, layout.strides)
            return calls.serial(kernel, total, out_shape, dtypes, len(shapes), returned, nd)
        shared = module.kernel_shared if native_parallel.PRANGE_AVAILABLE else None
        return _general_call(kernel, shared, layout, total, grain, dtypes, returned, self.threads)

    def _first_call(self, *inputs: Any) -> tuple[np.ndarray, ...]:
        """Plan the call for these shapes (inputs that are not arrays become arrays first)."""
        arrays = [np.asarray(x) for x in inputs]
        return self.call_for(tuple([a.shape for a in arrays]))(*arrays)

    def __call__(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        """The program's outputs for ``inputs`` (broadcast together, ONNX style)."""
        return self._dispatch(*inputs)


def _general_call(kernel: Any, shared: Any, layout: Layout, total: int, grain: int, dtypes: tuple[np.dtype, ...],
                  returned: tuple[int, ...] | None, threads: ThreadControl) -> Call:
    """Any loop shape split across the session's threads (or an empty output: no loop at all):
    one part per thread in a prange region of ``shared`` (the module's ``kernel_shared``) when
    there is one, else chunks of ``kernel`` on the session's Python pool.

    Why prange: its idle workers spin before they sleep, while handing half the work to a pool
    thread costs a wake-up that can exceed the half's own time (docs/benchmarks.md)."""
    out_shape = layout.out_shape
    if layout.mode == "flat":
        def operands(inputs: Sequence[np.ndarray]) -> list[Any]:
            return [x.ravel() for x in inputs]  # 1-D C-contiguous views (copies only if needed)
    else:
        loop_shape, strides = layout.shape, layout.strides

        def operands(inputs: Sequence[np.ndarray]) -> list[Any]:
            args: list[Any] = [loop_shape]
            for x, st in zip(inputs, strides):
                args += [x.ravel(), st]
            return args

    def call(*inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        outs = tuple([np.empty(out_shape, dtype=d) for d in dtypes])
        if total > 0:
            args = operands(inputs) + [o.ravel() for o in outs]
            parts = min(threads.count, total // grain)
            if shared is None or parts < 2:
                threads.run(lambda lo, hi: kernel(lo, hi, *args), total, grain)
            else:
                shared(native_parallel.use_threads(parts), total, *args)
        return outs if returned is None else tuple([outs[i] for i in returned])

    return call
