"""MaxPool and AveragePool (1-D/2-D) and the global pools (any rank), float, compiled; 8-bit MaxPool
through float32 (exact: every window holds an input element)."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node, window_geometry

from onnxplug_numba.kernels import pool as kpool
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain, all_present_same
from onnxplug_numba.ops._conv import decode
from onnxplug_numba.provider import NumbaProvider

#: 2-D pools share their planes across threads only in chunks of this much work (per plane: output
#: rows x (kh x input width + kw x output width)). The kernel is near memory-bound, and one thread
#: beat both the Python pool and a prange region (whose static split waits for a descheduled
#: worker) on ResNet-18 at batch 1 and 8 (docs/benchmarks.md, "Measurements behind design choices").
SHARE_MIN_WORK = 32_000_000


_EIGHT_BIT = frozenset({np.dtype(np.uint8), np.dtype(np.int8)})

#: Planes of at most this many elements go to the flat kernels (kernels/pool.py): on larger ones
#: the row kernels, which stay in the cache, were faster (max from 16x16, average from 32x32).
FLAT_MAX_PLANE = {kpool.MAX: 64, kpool.AVERAGE: 256}


class _Pool(NumbaKernel):
    kind = kpool.MAX

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._geometries: dict[tuple[int, ...], tuple] = {}

    @classmethod
    def supports(cls, node: Node, view: GraphView, dtypes: frozenset = FLOAT_TYPES) -> bool | Decline:
        t = view.type_of(node.inputs[0])
        kernel = node.attr("kernel_shape")
        if t is None or t.shape is None:
            return Decline("shape", f"the rank of {node.inputs[0]!r} is unknown")
        if kernel is None:
            return Decline("attribute", "no kernel_shape")
        if len(t.shape) - 2 not in (1, 2) or len(kernel) != len(t.shape) - 2:
            return Decline("shape", f"input rank {len(t.shape)} with a kernel_shape of rank {len(kernel)} "
                                    "(1-D and 2-D pools only)")
        if len([o for o in node.outputs if o]) != 1 or len(node.outputs) != 1:
            return Decline("attribute", "an Indices output is not computed")
        auto_pad = decode(node.attr("auto_pad", "NOTSET"))
        if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
            return Decline("attribute", f"auto_pad {auto_pad!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
        if auto_pad != "NOTSET" and node.attr("ceil_mode", 0):
            return Decline("attribute", "ceil_mode with an auto_pad other than NOTSET")
        return all_present_same(view, node, dtypes)

    def geometry(self, shape: tuple[int, ...]) -> tuple:
        """For an input shape: the output shape, the input's and the output's (N*C, H, W) shapes
        (1-D pools as H = 1), whether the planes are small enough for the flat kernels, and the
        window (kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w), ``end_*`` = input size + end padding."""
        g = window_geometry(shape[2:], self.attr("kernel_shape"), self.attr("strides"), self.attr("dilations"),
                            self.attr("auto_pad", "NOTSET"), self.attr("pads"), bool(self.attr("ceil_mode", 0)))
        g.require_windows(self.node.describe())
        kernel, strides, dilations, begin, end = g.kernel, g.strides, g.dilations, g.begin, g.end
        out = (*shape[:2], *g.out)
        if len(kernel) == 1:
            kernel, strides, dilations = [1, *kernel], [1, *strides], [1, *dilations]
            begin, end, spatial, osp = (0, *begin), (0, *end), (1, shape[2]), (1, out[2])
        else:
            spatial, osp = shape[2:], out[2:]
        planes = shape[0] * shape[1]
        flat = spatial[0] * spatial[1] <= FLAT_MAX_PLANE[self.kind]
        window = (*kernel, *strides, *dilations, *begin[:2], spatial[0] + end[0], spatial[1] + end[1])
        return out, (planes, *spatial), (planes, *osp), flat, window

    def compute(self, x: np.ndarray) -> np.ndarray:
        # geometry depends on the shape only: kept per shape (a dict write is atomic across threads)
        found = self._geometries.get(x.shape)
        if found is None:
            found = self._geometries[x.shape] = self.geometry(x.shape)
        out, x_planes, y_planes, flat, (kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w) = found
        planes = x_planes[0]
        x3 = np.ascontiguousarray(x).reshape(x_planes)
        y = np.empty(y_planes, dtype=x.dtype)
        if self.kind == kpool.MAX:
            run = kpool.max_pool2d_flat if flat else kpool.max_pool2d

            def work(lo: int, hi: int) -> None:
                run(x3[lo:hi], kh, kw, sh, sw, dh, dw, ph, pw, y[lo:hi])
        else:
            include = int(self.attr("count_include_pad", 0))
            run = kpool.average_pool2d_flat if flat else kpool.average_pool2d

            def work(lo: int, hi: int) -> None:
                run(x3[lo:hi], include, kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w, y[lo:hi])
        # per plane: each output row combines its window's input rows, then its taps
        per_plane = y_planes[1] * (kh * x_planes[2] + kw * y_planes[2])
        grain = max(1, SHARE_MIN_WORK // per_plane)
        if grain >= planes or not self.threads.parallel:
            work(0, planes)
        else:
            self.threads.run(work, planes, grain)
        return y.reshape(out)


@NumbaProvider.kernel("MaxPool")
class MaxPool(_Pool):
    """MaxPool with its Indices output left unclaimed."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        if int(node.attr("storage_order", 0)) != 0:
            return Decline("attribute", "storage_order 1 is not computed")
        if view.dtype_of(node.inputs[0]) in _EIGHT_BIT:
            # exact through float32, as long as every window holds an input element (a window
            # of padding alone would give -inf, which no 8-bit value is)
            pads = [int(p) for p in (node.attr("pads") or [])]
            kernel = [int(k) for k in node.attr("kernel_shape") or []]
            auto_pad = decode(node.attr("auto_pad", "NOTSET"))
            if auto_pad not in ("NOTSET", "VALID") or any(p >= k for p, k in zip(pads, kernel + kernel)):
                return Decline("attribute", "8-bit MaxPool with a pad as wide as the window or an auto_pad")
            if view.dtype_of(node.outputs[0]) not in (None, view.dtype_of(node.inputs[0])):
                return Decline("dtype", "the output's element type differs from the input's")
            return super().supports(node, view, _EIGHT_BIT)
        return super().supports(node, view)

    def compute(self, x: np.ndarray) -> np.ndarray:
        if x.dtype in _EIGHT_BIT:
            return super().compute(x.astype(np.float32)).astype(x.dtype)
        return super().compute(x)


@NumbaProvider.kernel("AveragePool")
class AveragePool(_Pool):
    kind = kpool.AVERAGE


class _GlobalPool(NumbaKernel):
    kind = kpool.MAX

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        t = view.type_of(node.inputs[0])
        if t is None or t.shape is None or len(t.shape) < 3:
            return Decline("shape", f"the rank of {node.inputs[0]!r} is unknown or below 3")
        return all_present_same(view, node, FLOAT_TYPES)

    def compute(self, x: np.ndarray) -> np.ndarray:
        n, c = x.shape[:2]
        y = np.empty(n * c, dtype=x.dtype)
        rows = np.ascontiguousarray(x).reshape(n * c, -1)
        self.threads.run(lambda lo, hi: kpool.global_pool(rows[lo:hi], self.kind, y[lo:hi]), n * c,
                         row_grain(rows.shape[1]))
        return y.reshape((n, c) + (1,) * (x.ndim - 2))


@NumbaProvider.kernel("GlobalMaxPool")
class GlobalMaxPool(_GlobalPool):
    pass


@NumbaProvider.kernel("GlobalAveragePool")
class GlobalAveragePool(_GlobalPool):
    kind = kpool.AVERAGE
