"""Cast, CastLike, Pad, ArgMax/ArgMin, CumSum, OneHot, EyeLike, Einsum, Hardmax, LpNormalization,
InstanceNormalization: data movement or index logic on plain dtypes, exact with numpy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node, numpy_dtype, onnx_type_name

from onnxplug_numba.kernels import norm as knorm
from onnxplug_numba.ops._pad import pad as pad_by_slices
from onnxplug_numba.ops._base import PLAIN_DTYPES, FLOAT_TYPES, HostKernel, NumbaKernel, row_grain, all_present_same
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel


def _ints(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


@op("Cast", 6)
class Cast(HostKernel):
    """numpy's astype between plain numeric types and bool (round to nearest for float16)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        try:
            target = numpy_dtype(int(node.attr("to")))
        except (TypeError, ValueError, KeyError):
            return Decline("attribute", f"'to' = {node.attr('to')!r} is not a tensor element type")
        if target.name not in PLAIN_DTYPES:
            return Decline("dtype", f"a cast to {onnx_type_name(int(node.attr('to')))}")
        return super().supports(node, view)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.target = numpy_dtype(int(self.attr("to")))

    def compute(self, x: np.ndarray) -> np.ndarray:
        return x.astype(self.target)


@op("CastLike", 15)
class CastLike(HostKernel):
    def compute(self, x: np.ndarray, like: np.ndarray) -> np.ndarray:
        return x.astype(like.dtype)


@op("Pad", 2)
class Pad(HostKernel):
    """constant, reflect, edge and wrap padding; negative pads crop. Constant pads, value and
    axes are read once; each input shape's crop and margins are worked out once."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        mode = node.attr("mode", "constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode not in ("constant", "reflect", "edge", "wrap"):
            return Decline("attribute", f"mode {mode!r} is not one of constant, reflect, edge, wrap")
        return super().supports(node, view)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        mode = self.attr("mode", "constant")
        self.mode = mode.decode() if isinstance(mode, bytes) else mode
        self.fixed: tuple[list[int], Any, list[int] | None] | None = None
        if node.opset < 11:
            self.fixed = ([int(p) for p in self.attr("pads")], float(self.attr("value", 0.0)), None)
        else:
            inputs = list(node.inputs) + [""] * (4 - len(node.inputs))
            consts = context.constants
            if all(not name or name in consts for name in inputs[1:4]):
                pads, value, axes = (consts[name] if name else None for name in inputs[1:4])
                self.fixed = (_ints(pads), self._fill(value), _ints(axes) if axes is not None else None)
        self.shapes: dict[tuple[int, ...], tuple[tuple[slice, ...], list[tuple[int, int]]]] = {}

    @staticmethod
    def _fill(value: np.ndarray | None) -> Any:
        return value.reshape(-1)[0] if value is not None and value.size else 0

    def _geometry(self, shape: tuple[int, ...], flat: list[int], axes: list[int] | None
                  ) -> tuple[tuple[slice, ...], list[tuple[int, int]]]:
        ndim = len(shape)
        picked = axes if axes is not None else list(range(ndim))
        picked = [a + ndim if a < 0 else a for a in picked]
        width = [(0, 0)] * ndim
        for i, a in enumerate(picked):
            width[a] = (flat[i], flat[i + len(picked)])
        crop = tuple(slice(max(0, -b), shape[d] - max(0, -e)) for d, (b, e) in enumerate(width))
        return crop, [(max(0, b), max(0, e)) for b, e in width]

    def compute(self, x: np.ndarray, pads: np.ndarray | None = None, value: np.ndarray | None = None,
                axes: np.ndarray | None = None) -> np.ndarray:
        if self.fixed is not None:
            flat, fill, picked = self.fixed
            geometry = self.shapes.get(x.shape)
            if geometry is None:
                if len(self.shapes) >= 16:
                    self.shapes.clear()
                geometry = self.shapes[x.shape] = self._geometry(x.shape, flat, picked)
        else:
            fill = self._fill(value)
            geometry = self._geometry(x.shape, _ints(pads), _ints(axes) if axes is not None else None)
        crop, grow = geometry
        return pad_by_slices(x[crop], grow, self.mode, fill)


class _ArgExtreme(HostKernel):
    pick = staticmethod(np.argmax)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 0))
        self.last = bool(self.attr("select_last_index", 0))
        self.keepdims = bool(self.attr("keepdims", 1))

    def compute(self, x: np.ndarray) -> np.ndarray:
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        if self.last:
            found = x.shape[axis] - 1 - self.pick(np.flip(x, axis), axis=axis, keepdims=self.keepdims)
        else:
            found = self.pick(x, axis=axis, keepdims=self.keepdims)
        return found.astype(np.int64, copy=False)


@op("ArgMax")
class ArgMax(_ArgExtreme):
    pick = staticmethod(np.argmax)


@op("ArgMin")
class ArgMin(_ArgExtreme):
    pick = staticmethod(np.argmin)


@op("CumSum", 11)
class CumSum(HostKernel):
    def compute(self, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
        a = int(axis.reshape(-1)[0])
        a = a + x.ndim if a < 0 else a
        data = np.flip(x, a) if self.attr("reverse", 0) else x
        out = np.cumsum(data, axis=a, dtype=x.dtype)
        if self.attr("exclusive", 0):
            out = np.concatenate([np.zeros_like(np.take(out, [0], axis=a)),
                                  np.take(out, range(out.shape[a] - 1), axis=a)], axis=a)
        return np.ascontiguousarray(np.flip(out, a) if self.attr("reverse", 0) else out)


@op("OneHot", 9)
class OneHot(HostKernel):
    def compute(self, indices: np.ndarray, depth: np.ndarray, values: np.ndarray) -> np.ndarray:
        d = int(depth.reshape(-1)[0])
        idx = indices.astype(np.int64)
        idx = np.where(idx < 0, idx + d, idx)
        axis = int(self.attr("axis", -1))
        rank = indices.ndim + 1
        axis = axis + rank if axis < 0 else axis
        hot = np.expand_dims(idx, axis) == np.arange(d).reshape([-1 if i == axis else 1 for i in range(rank)])
        off, on = values.reshape(-1)[:2]
        return np.where(hot, on, off).astype(values.dtype)


@op("EyeLike", 9)
class EyeLike(HostKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        t = view.type_of(node.inputs[0])
        return super().supports(node, view) and t is not None and t.shape is not None and len(t.shape) == 2

    def compute(self, x: np.ndarray) -> np.ndarray:
        dtype = numpy_dtype(int(self.attr("dtype"))) if self.attr("dtype") is not None else x.dtype
        return np.eye(x.shape[0], x.shape[1], k=int(self.attr("k", 0)), dtype=dtype)


@op("Einsum", 12)
class Einsum(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def compute(self, *xs: np.ndarray) -> np.ndarray:
        self.threads.blas()  # einsum's products: one BLAS thread, like every kernel here
        return np.asarray(np.einsum(self.attr("equation").replace(" ", ""), *xs, optimize=len(xs) > 2))


@op("Hardmax")
class Hardmax(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        axis = int(self.attr("axis", 1 if self.node.opset < 13 else -1))
        axis = axis + x.ndim if axis < 0 else axis
        if self.node.opset < 13:
            flat = x.reshape(int(math.prod(x.shape[:axis])), -1)
            out = np.zeros_like(flat)
            out[np.arange(flat.shape[0]), np.argmax(flat, axis=1)] = 1
            return out.reshape(x.shape)
        out = np.zeros_like(x)
        np.put_along_axis(out, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
        return out


@op("LpNormalization")
class LpNormalization(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return int(node.attr("p", 2)) in (1, 2) and all_present_same(view, node, FLOAT_TYPES)

    def compute(self, x: np.ndarray) -> np.ndarray:
        axis = int(self.attr("axis", -1))
        if int(self.attr("p", 2)) == 1:
            norm = np.sum(np.abs(x), axis=axis, keepdims=True)
        else:
            norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
        return np.divide(x, norm, out=np.zeros_like(x), where=norm != 0)  # a zero vector stays zero


@op("InstanceNormalization", 6)
class InstanceNormalization(NumbaKernel):
    """Per (n, c) normalisation over the spatial axes (the compiled LayerNorm rows), then scale and bias."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def compute(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
        n, c = x.shape[:2]
        rows = np.ascontiguousarray(x).reshape(n * c, -1)
        ones = np.ones(rows.shape[1], dtype=x.dtype)
        y = np.empty_like(rows)
        stats = np.empty(n * c, dtype=x.dtype)
        zeros, inv, eps = np.zeros_like(ones), stats.copy(), float(self.attr("epsilon", 1e-5))
        self.threads.run(lambda lo, hi: knorm.layer_norm_rows(rows[lo:hi], ones, zeros, eps, y[lo:hi], stats[lo:hi],
                                                              inv[lo:hi]), rows.shape[0], row_grain(rows.shape[1]))
        shape = (1, c) + (1,) * (x.ndim - 2)
        return (y.reshape(x.shape) * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)
