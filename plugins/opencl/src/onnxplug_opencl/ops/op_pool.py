"""MaxPool (with Indices), AveragePool and LpPool over 1 to 3 spatial axes (``kernels/pool.cl``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Decline, GraphView, Node, window_geometry

from onnxplug_opencl.engine.dtypes import FLOATS, c_type, pragmas
from onnxplug_opencl.ops._base import ClKernel, dtypes_in
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry
from onnxplug_opencl.runtime.programs import kernel_source

_MAX_TYPES = FLOATS | {np.dtype(np.int8), np.dtype(np.uint8)}


class _Pool(ClKernel):
    mode = 0

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        t = view.type_of(node.inputs[0])
        rank = len(node.attr("kernel_shape") or [])
        allowed = _MAX_TYPES if cls.mode == 0 else FLOATS
        floats = dtypes_in(node, view, allowed, node.inputs[:1])
        if not floats:
            return floats
        if not 1 <= rank <= 3:
            return Decline("attribute", f"a kernel_shape of rank {rank} (1 to 3 only)")
        return t is None or t.shape is None or len(t.shape) == rank + 2 or \
            Decline("shape", f"input rank {len(t.shape)} does not match kernel_shape of rank {rank}")

    def compute(self, x: Any) -> Any:
        g = window_geometry(x.shape[2:], self.attr("kernel_shape"), self.attr("strides"), self.attr("dilations"),
                            self.attr("auto_pad"), self.attr("pads"), bool(self.attr("ceil_mode", 0)))
        g.require_windows(self.node.describe())
        kernel, strides, dilations, begin, end = list(g.kernel), list(g.strides), list(g.dilations), g.begin, g.end
        rank = len(kernel)
        spatial = list(g.in_spatial)
        out_shape = (*x.shape[:2], *g.out)
        pad3 = lambda v, f: [f] * (3 - rank) + list(v)  # noqa: E731
        out = self.empty(out_shape, x.dtype)
        want_indices = self.mode == 0 and len(self.node.outputs) > 1 and bool(self.node.outputs[1])
        indices = self.empty(out_shape, np.int64) if want_indices else None
        if out.size and self.mode == 0 and rank == 2 and indices is None:
            self._launch_max2d(x, out, spatial, out_shape[2:], kernel, strides, begin, dilations)
        elif out.size:
            self._launch(x, out, indices, pad3(spatial, 1), pad3(out_shape[2:], 1), pad3(kernel, 1),
                         pad3(strides, 1), pad3(begin, 0), pad3(end, 0), pad3(dilations, 1))
        return (out, indices) if want_indices else out

    def _launch_max2d(self, x: Any, out: Any, space: list[int], out_space: list[int], kern: list[int],
                      strides: list[int], begin: list[int], dil: list[int]) -> None:
        """2-D MaxPool without Indices: the window is fixed at build time (few distinct ones per model)."""
        dt = np.dtype(x.dtype)
        lowest = "(-INFINITY)" if dt in FLOATS else str(np.iinfo(dt).min)
        options = [f"-DT={c_type(dt)}", f"-DACC={'double' if dt == np.float64 else 'float'}", "-DMODE=0",
                   f"-DLOWEST={lowest}", "-DWANT_INDICES=0", "-DMAXPOOL2D", f"-DPKH={kern[0]}", f"-DPKW={kern[1]}",
                   f"-DPSH={strides[0]}", f"-DPSW={strides[1]}", f"-DPDH={dil[0]}", f"-DPDW={dil[1]}"]
        source = pragmas({dt}) + "\n" + kernel_source("pool.cl")
        kernel = self.rt.programs.kernel("pool.cl", source, "maxpool2d", options)
        i32 = np.int32
        rows = int(out.size) // max(out_space[-1], 1)
        self.rt.launch(kernel, (rows,), None, i32(rows), x.base_data, i32(x.offset // dt.itemsize), out.base_data,
                       i32(space[0]), i32(space[1]), i32(out_space[0]), i32(out_space[1]), i32(begin[0]),
                       i32(begin[1]), label=f"maxpool2d {list(x.shape)} k={kern}" if self.rt.profiling else "")

    def _launch(self, x: Any, out: Any, indices: Any, *dims: list[int]) -> None:
        dt = np.dtype(x.dtype)
        acc = "double" if dt == np.float64 else "float"
        lowest = "(-INFINITY)" if dt in FLOATS else str(np.iinfo(dt).min)
        options = [f"-DT={c_type(dt)}", f"-DACC={acc}", f"-DMODE={self.mode}", f"-DLOWEST={lowest}",
                   f"-DWANT_INDICES={int(indices is not None)}"]
        if self.mode == 1 and int(self.attr("count_include_pad", 0)):
            options.append("-DCOUNT_PAD")
        source = pragmas({dt}) + "\n" + kernel_source("pool.cl")
        kernel = self.rt.programs.kernel("pool.cl", source, "pool", options)
        i32 = np.int32
        space, out_space, kern, strides, begin, end, dil = dims
        ordered = [*space, *out_space, *kern, *strides, *begin, *end, *dil]
        p = float(self.attr("p", 2)) if self.mode == 2 else 0.0
        rows = int(out.size) // max(out_space[-1], 1)
        self.rt.launch(kernel, (rows,), None, i32(rows), x.base_data, i32(x.offset // dt.itemsize),
                       out.base_data, (indices if indices is not None else out).base_data,
                       *[i32(v) for v in ordered], i32(self.attr("storage_order", 0)),
                       np.float64(p) if acc == "double" else np.float32(p))


@OpenCLProvider.kernel("MaxPool")
class MaxPool(_Pool):
    """Max over each window; optional Indices output."""

    mode = 0


@OpenCLProvider.kernel("AveragePool")
class AveragePool(_Pool):
    """Mean over each window (count_include_pad chooses the divisor)."""

    mode = 1


@OpenCLProvider.kernel("LpPool")
class LpPool(_Pool):
    """Lp norm over each window."""

    mode = 2
