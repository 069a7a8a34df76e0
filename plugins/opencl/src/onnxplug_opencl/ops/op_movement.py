"""Data movement: Transpose, Concat, Slice, Split, Gather, Expand, Tile, Pad, DepthToSpace, SpaceToDepth."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_opencl.engine import movement
from onnxplug_opencl.engine.dtypes import COPY_TYPES
from onnxplug_opencl.engine.elementwise import View
from onnxplug_opencl.ops._base import ClKernel, host_mirror, mirrored, normalize_axis
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry
from onnxplug_opencl.runtime.programs import kernel_source


def _mirror_result(kernel: ClKernel, inputs: list[Any], compute: Any) -> Any:
    """Run ``compute`` on host mirrors when every input has one; returns None otherwise."""
    host = mirrored(inputs)
    if host is None:
        return None
    # np.array keeps a 0-d result 0-d (ascontiguousarray would make it 1-d: Gather with a scalar index)
    return kernel.upload(np.array(compute(*host), order="C"))


@OpenCLProvider.kernel("Transpose")
class Transpose(ClKernel):
    """A strided copy with permuted strides (default: reversed axes)."""

    def compute(self, x: Any) -> Any:
        perm = self.attr("perm")
        perm = list(range(x.ndim))[::-1] if perm is None else [normalize_axis(p, x.ndim, self.node) for p in perm]
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(f"{self.node.describe()}: perm {perm} is not a permutation of {x.ndim} axes")
        return movement.transpose(self.rt, x, perm)


@OpenCLProvider.kernel("Concat")
class Concat(ClKernel):
    """Each input copied into its slice of the output."""

    def compute(self, *xs: Any) -> Any:
        axis = normalize_axis(self.attr("axis", 0), xs[0].ndim, self.node)
        found = _mirror_result(self, list(xs), lambda *h: np.concatenate(h, axis=axis))
        if found is not None:
            return found
        return movement.concat(self.rt, [x for x in xs], axis)


def _slice_params(shape: tuple[int, ...], starts: np.ndarray, ends: np.ndarray, axes: np.ndarray | None,
                  steps: np.ndarray | None, node: Node) -> tuple[list[int], list[int], list[int]]:
    rank = len(shape)
    begin, step, out = [0] * rank, [1] * rank, list(shape)
    axes_list = list(range(len(starts))) if axes is None else [normalize_axis(a, rank, node) for a in axes]
    steps_list = [1] * len(starts) if steps is None else [int(s) for s in steps]
    for a, s, e, st in zip(axes_list, starts, ends, steps_list):
        if st == 0:
            raise ValueError(f"{node.describe()}: slice step 0 on axis {a}")
        s, e = int(max(min(int(s), 2**62), -2**62)), int(max(min(int(e), 2**62), -2**62))
        r = range(*slice(s, e, st).indices(shape[a]))
        begin[a], step[a], out[a] = (r.start if len(r) else 0), st, len(r)
    return begin, step, out


@OpenCLProvider.kernel("Slice")
class Slice(ClKernel):
    """A strided view (negative steps walk backwards) copied out."""

    def compute(self, x: Any, starts: Any = None, ends: Any = None, axes: Any = None, steps: Any = None) -> Any:
        if self.node.opset < 10:
            st, en = np.array(self.attr("starts")), np.array(self.attr("ends"))
            ax = self.attr("axes")
            ax, sp = (None if ax is None else np.array(ax)), None
        else:
            st, en = self.host_values(starts, 1).reshape(-1), self.host_values(ends, 2).reshape(-1)
            ax = self.host_values(axes, 3).reshape(-1) if axes is not None else None
            sp = self.host_values(steps, 4).reshape(-1) if steps is not None else None
        begin, step, out_shape = _slice_params(tuple(x.shape), st, en, ax, sp, self.node)
        mirror = host_mirror(x)
        if mirror is not None:
            index = tuple(slice(b, b + s * n if b + s * n >= 0 else None, s) if n else slice(0, 0)
                          for b, s, n in zip(begin, step, out_shape))
            return self.upload(np.ascontiguousarray(mirror[index]))
        return movement.copy_view(self.rt, movement.slice_view(x, begin, step, out_shape))


@OpenCLProvider.kernel("Split")
class Split(ClKernel):
    """Consecutive slices along ``axis``: sizes from the attribute/input, else equal parts."""

    def compute(self, x: Any, split: Any = None) -> tuple[Any, ...]:
        axis = normalize_axis(self.attr("axis", 0), x.ndim, self.node)
        count = len(self.node.outputs)
        if self.node.opset < 13:
            sizes = self.attr("split")
        else:
            sizes = None if split is None else [int(s) for s in self.host_values(split, 1).reshape(-1)]
        dim = int(x.shape[axis])
        if sizes is None:
            part = -(-dim // count)
            sizes = [min(part, max(dim - part * i, 0)) for i in range(count)]
        outs, start = [], 0
        for size in sizes:
            begin = [0] * x.ndim
            begin[axis] = start
            shape = list(x.shape)
            shape[axis] = int(size)
            outs.append(movement.copy_view(self.rt, movement.slice_view(x, begin, [1] * x.ndim, shape)))
            start += int(size)
        return tuple(outs)


@OpenCLProvider.kernel("Gather")
class Gather(ClKernel):
    """Rows of ``data`` along ``axis`` picked by int32/int64 ``indices``."""

    def compute(self, data: Any, indices: Any) -> Any:
        axis = normalize_axis(self.attr("axis", 0), data.ndim, self.node)
        found = _mirror_result(self, [data, indices], lambda d, i: np.take(d, i.astype(np.int64), axis=axis))
        if found is not None:
            return found
        return movement.gather(self.rt, data, indices, axis)


@OpenCLProvider.kernel("Expand")
class Expand(ClKernel):
    """Broadcast to the bidirectional broadcast of the input shape and the given shape."""

    def compute(self, x: Any, shape: Any) -> Any:
        dims = tuple(int(d) for d in self.host_values(shape, 1).reshape(-1))
        target = tuple(np.broadcast_shapes(tuple(x.shape), dims))
        return movement.expand(self.rt, x, target)


@OpenCLProvider.kernel("Tile")
class Tile(ClKernel):
    """Broadcast of ``x`` viewed as [1, d0, 1, d1, ...] to [r0, d0, r1, d1, ...], then a reshape."""

    def compute(self, x: Any, repeats: Any) -> Any:
        reps = [int(r) for r in self.host_values(repeats, 1).reshape(-1)]
        shape = [int(d) for d in x.shape]
        interleaved_in = tuple(v for d in shape for v in (1, d))
        interleaved_out = tuple(v for r, d in zip(reps, shape) for v in (r, d))
        src = movement.alias(self.rt, x, interleaved_in) if x.size else x
        out = self.empty(interleaved_out, x.dtype)
        if out.size:
            movement.strided_copy(self.rt, View.of(src), View.of(out), interleaved_out)
        return movement.alias(self.rt, out, tuple(r * d for r, d in zip(reps, shape)))


_PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}


@OpenCLProvider.kernel("Pad")
class Pad(ClKernel):
    """Constant, reflect, edge and wrap padding (negative pads crop), up to rank 8."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        mode = node.attr("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        t = view.type_of(node.inputs[0])
        if mode not in _PAD_MODES:
            return Decline("attribute", f"mode {mode!r} is not one of {', '.join(sorted(_PAD_MODES))}")
        return t is None or t.shape is None or len(t.shape) <= 8 or Decline("shape", f"rank {len(t.shape)} (8 at most)")

    def compute(self, x: Any, pads: Any = None, value: Any = None, axes: Any = None) -> Any:
        rank = x.ndim
        if self.node.opset < 11:
            p = [int(v) for v in self.attr("pads")]
            fill = float(self.attr("value", 0.0))
        else:
            p = [int(v) for v in self.host_values(pads, 1).reshape(-1)]
            fill = self.host_values(value, 2).reshape(-1)[0] if value is not None else 0
        if axes is not None:
            picked = [normalize_axis(a, rank, self.node) for a in self.host_values(axes, 3).reshape(-1)]
            full = [0] * (2 * rank)
            for k, a in enumerate(picked):
                full[a], full[a + rank] = p[k], p[k + len(picked)]
            p = full
        begin, end = p[:rank], p[rank:]
        out_shape = [int(d) + b + e for d, b, e in zip(x.shape, begin, end)]
        mode = self.attr("mode", b"constant")
        mode = _PAD_MODES[mode.decode() if isinstance(mode, bytes) else mode]
        out = self.empty(out_shape, x.dtype)
        if out.size == 0:
            return out
        if x.size == 0 and mode != 0:
            raise ValueError(f"{self.node.describe()}: cannot {self.attr('mode')!r}-pad an empty tensor")
        return self._launch(x, out, begin, mode, fill)

    def _launch(self, x: Any, out: Any, begin: list[int], mode: int, fill: Any) -> Any:
        import pyopencl.cltypes as clt

        item = x.dtype.itemsize
        ctype = COPY_TYPES[item]
        kernel = self.rt.programs.kernel("pad.cl", kernel_source("pad.cl"), "pad",
                                         [f"-DT={ctype}", f"-DMODE={mode}", f"-DRANK={max(x.ndim, 1)}"])
        pad8 = lambda v, f: clt.make_int8(*(list(v) + [f] * (8 - len(v))))  # noqa: E731
        raw = np.asarray(fill, dtype=x.dtype).reshape(1).view({1: np.uint8, 2: np.uint16, 4: np.uint32,
                                                               8: np.uint64}[item])[0]
        in_buf = x.base_data if x.size else out.base_data
        self.rt.launch(kernel, (int(out.size),), None, np.int32(out.size), pad8(out.shape, 1),
                       pad8(x.shape, 1), pad8(begin, 0), in_buf, np.int32(x.offset // item if x.size else 0),
                       out.base_data, np.int32(out.offset // item), raw)
        return out


@OpenCLProvider.kernel("DepthToSpace")
class DepthToSpace(ClKernel):
    """A reshape, a transposing copy and a reshape (DCR or CRD order)."""

    def compute(self, x: Any) -> Any:
        b = int(self.attr("blocksize"))
        n, c, h, w = (int(d) for d in x.shape)
        mode = self.attr("mode", b"DCR")
        if (mode.decode() if isinstance(mode, bytes) else mode) == "DCR":
            v = movement.alias(self.rt, x, (n, b, b, c // (b * b), h, w))
            t = movement.transpose(self.rt, v, (0, 3, 4, 1, 5, 2))
        else:
            v = movement.alias(self.rt, x, (n, c // (b * b), b, b, h, w))
            t = movement.transpose(self.rt, v, (0, 1, 4, 2, 5, 3))
        return movement.alias(self.rt, t, (n, c // (b * b), h * b, w * b))


@OpenCLProvider.kernel("SpaceToDepth")
class SpaceToDepth(ClKernel):
    """A reshape, a transposing copy and a reshape (DCR or CRD order)."""

    def compute(self, x: Any) -> Any:
        b = int(self.attr("blocksize"))
        n, c, h, w = (int(d) for d in x.shape)
        v = movement.alias(self.rt, x, (n, c, h // b, b, w // b, b))
        mode = self.attr("mode", b"DCR")
        crd = (mode.decode() if isinstance(mode, bytes) else mode) == "CRD"
        t = movement.transpose(self.rt, v, (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4))
        return movement.alias(self.rt, t, (n, c * b * b, h // b, w // b))

