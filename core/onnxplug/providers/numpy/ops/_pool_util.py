"""Pooling geometry and the window loops shared by MaxPool, AveragePool and LpPool.

Every pool reduces shifted strided views of the input, one kernel offset and one axis at a time,
so each step is one vectorised pass over the output (no window materialisation, no padded copy).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from onnxplug.geometry import window_geometry
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import pad_spatial


class PoolGeometry:
    """Kernel, strides, dilations, pads and output size of one pooling call (``onnxplug.geometry``;
    under SAME_* the pads come from the undilated kernel, as onnxruntime's pools pad)."""

    def __init__(self, attr, in_sp: Sequence[int], ceil_default: int = 0) -> None:
        g = window_geometry(in_sp, attr("kernel_shape"), attr("strides", None), attr("dilations", None),
                            attr("auto_pad", "NOTSET"), attr("pads", None), bool(int(attr("ceil_mode", ceil_default))),
                            same_dilated=False)
        self.geometry = g
        self.kernel, self.strides, self.dilations = list(g.kernel), list(g.strides), list(g.dilations)
        self.begin, self.end, self.out, self.extra = list(g.begin), list(g.end), list(g.out), list(g.extra)
        self.in_sp = list(in_sp)
        self._counts: dict[bool, np.ndarray] = {}

    def padded(self, x: np.ndarray, value) -> np.ndarray:
        """``x`` padded with ``value`` (head pads, tail pads plus the ceil-mode extra)."""
        return pad_spatial(x, self.begin, [e + x_ for e, x_ in zip(self.end, self.extra)], value)

    def views(self, xp: np.ndarray):
        """(kernel index, strided view of shape (..., *out)) for every kernel offset."""
        for idx in np.ndindex(*self.kernel):
            sl = tuple(slice(i * d, i * d + (o - 1) * s + 1, s)
                       for i, d, o, s in zip(idx, self.dilations, self.out, self.strides))
            yield idx, xp[(Ellipsis,) + sl]

    def counts(self, include_pad: bool) -> np.ndarray:
        """Per output position, how many taps fall in the input (or its explicit pads); kept (read
        only) per ``include_pad``, as the geometry is kept per input size (PoolKernel)."""
        found = self._counts.get(include_pad)
        if found is None:
            found = self._counts[include_pad] = self.geometry.tap_counts(include_pad)
            found.flags.writeable = False
        return found


def lowest(dtype: np.dtype):
    """The identity of max for ``dtype``."""
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _tap_range(position: int, stride: int, size: int, count: int) -> tuple[int, int]:
    """The outputs ``o`` in [lo, hi) whose tap reads input ``o * stride + position`` inside [0, size)."""
    lo = max(0, -(position // stride))
    hi = min(count, (size - 1 - position) // stride + 1) if size - 1 - position >= 0 else 0
    return lo, max(lo, hi)


def _separable(x: np.ndarray, g: PoolGeometry, combine, identity, begin: Sequence[int]) -> np.ndarray:
    """Reduce the windows one spatial axis at a time (max and sum are separable over a box):
    k - 1 ``combine`` passes per axis instead of prod(k) - 1 over the whole output.

    ``x`` starts ``begin`` positions after the windows' origin (its head padding, not materialised):
    a tap is combined only into the outputs whose window puts it inside ``x`` (padding holds
    ``identity``, which changes nothing)."""
    lead = x.ndim - len(g.kernel)
    cur = x
    for axis in range(len(g.kernel)):  # outer axes first: their views keep whole contiguous rows
        k, d, o, s, b = g.kernel[axis], g.dilations[axis], g.out[axis], g.strides[axis], begin[axis]
        ax = lead + axis
        size = cur.shape[ax]
        if b == 0 and (o - 1) * s + (k - 1) * d < size:  # every tap inside: the plain loop
            index = [slice(None)] * cur.ndim
            views = []
            for i in range(k):
                index[ax] = slice(i * d, i * d + (o - 1) * s + 1, s)
                views.append(cur[tuple(index)])
            cur = _combined(views, combine)
            continue

        def tap(i: int, lo: int, hi: int) -> np.ndarray:
            """The inputs tap ``i`` reads for outputs [lo, hi) along ``ax``."""
            start = lo * s + i * d - b
            index = [slice(None)] * cur.ndim
            index[ax] = slice(start, start + (hi - lo - 1) * s + 1, s)
            return cur[tuple(index)]

        ranges = [_tap_range(i * d - b, s, size, o) for i in range(k)]
        full = [i for i, r in enumerate(ranges) if r == (0, o)]
        if not full:  # some window lies wholly in the padding
            shape = list(cur.shape)
            shape[ax] = o
            res = np.full(shape, identity, dtype=cur.dtype)
        else:
            res = _combined([tap(i, 0, o) for i in full], combine)
        for i, (lo, hi) in enumerate(ranges):
            if i in full or lo >= hi:
                continue
            index = [slice(None)] * cur.ndim
            index[ax] = slice(lo, hi)
            part = res[tuple(index)]
            combine(part, tap(i, lo, hi), out=part)
        cur = res
    return cur


def _combined(views: Sequence[np.ndarray], combine) -> np.ndarray:
    """``combine`` of all ``views`` into a new array; the first two in one pass (a copy of the first
    and a pass combining the second cost one pass more: ResNet-18's 3x3/2 max pool took 1.2x as long)."""
    if len(views) == 1:
        return views[0].copy()
    res = combine(views[0], views[1])
    for v in views[2:]:
        combine(res, v, out=res)
    return res


#: A pool's cost per input value and kernel tap, in multiply-adds of a product: large pools go to
#: the product threads in blocks of planes (ResNet-18's max pool at batch 8; at batch 1 it stays
#: whole, where splitting gained nothing).
MACS_PER_TAP = 4
#: Blocks of planes per product thread (shared out as threads become free).
BLOCKS_PER_THREAD = 2


def _reduce_windows(x: np.ndarray, g: PoolGeometry, combine, identity) -> np.ndarray:
    """Windows reduced by ``combine`` with the padding holding ``identity``. Strided pools skip the
    padded copy; with a stride of 1 the taps clipped to the input split every row, and padding is
    faster.

    Large pools reduce blocks of (image, channel) planes on the product threads."""
    nd = len(g.kernel)
    planes = math.prod(x.shape[:-nd])
    blocks = min(planes, PRODUCT_THREADS.threads * BLOCKS_PER_THREAD)
    if blocks > 1:
        flat = x.reshape((planes,) + x.shape[-nd:])
        out = np.empty((planes,) + tuple(g.out), dtype=x.dtype)
        step = -(-planes // blocks)

        def block(k: int) -> None:
            out[k * step:(k + 1) * step] = _reduce_planes(flat[k * step:(k + 1) * step], g, combine, identity)

        if parallel_for(-(-planes // step), block, x.size * math.prod(g.kernel) * MACS_PER_TAP):
            return out.reshape(x.shape[:-nd] + tuple(g.out))
    return _reduce_planes(x, g, combine, identity)


def _reduce_planes(x: np.ndarray, g: PoolGeometry, combine, identity) -> np.ndarray:
    if min(g.strides, default=1) > 1:
        return _separable(x, g, combine, identity, g.begin)
    return _separable(g.padded(x, identity), g, combine, identity, [0] * len(g.kernel))


def max_pool(x: np.ndarray, g: PoolGeometry) -> np.ndarray:
    """Max over windows; padding never wins."""
    if min(g.out, default=1) <= 0:
        return np.zeros(x.shape[:2] + tuple(max(o, 0) for o in g.out), dtype=x.dtype)
    return _reduce_windows(x, g, np.maximum, lowest(x.dtype))


def sum_pool(x: np.ndarray, g: PoolGeometry) -> np.ndarray:
    """Sum over windows with zero padding."""
    if min(g.out, default=1) <= 0:
        return np.zeros(x.shape[:2] + tuple(max(o, 0) for o in g.out), dtype=x.dtype)
    return _reduce_windows(x, g, np.add, 0)


class PoolKernel(NumpyKernel):
    """Base of the windowed pools: builds the geometry from the node's attributes."""

    _KEEP_SHAPES = 16

    def geometry(self, x: np.ndarray) -> PoolGeometry:
        """The geometry for x's spatial size, built once per size (the attribute reads and pad
        arithmetic cost as much as a small pool); geometries are read, never changed."""
        kept = self.__dict__.setdefault("_geometries", {})
        key = x.shape[2:]
        g = kept.get(key)
        if g is None:
            if len(kept) >= self._KEEP_SHAPES:
                kept.clear()
            g = kept[key] = PoolGeometry(self.attr, key)
        return g
