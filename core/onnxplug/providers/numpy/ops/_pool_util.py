"""Pooling geometry and the window loops shared by MaxPool, AveragePool and LpPool.

Every pool reduces shifted strided views of the padded input, one kernel offset at a time, so
each step is one vectorised pass over the output (no window materialisation).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._conv_util import pad_spatial


class PoolGeometry:
    """Kernel, strides, dilations, pads and output size of one pooling call."""

    def __init__(self, attr, in_sp: Sequence[int], ceil_default: int = 0) -> None:
        self.kernel = [int(k) for k in attr("kernel_shape")]
        nd = len(self.kernel)
        self.strides = [int(s) for s in (attr("strides", None) or [1] * nd)]
        self.dilations = [int(d) for d in (attr("dilations", None) or [1] * nd)]
        span = [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations)]
        auto_pad = attr("auto_pad", "NOTSET")
        ceil_mode = int(attr("ceil_mode", ceil_default))
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = [-(-i // s) for i, s in zip(in_sp, self.strides)]
            # as onnxruntime and the reference: the undilated kernel sets SAME padding
            total = [max(0, (o - 1) * s + k - i) for o, s, k, i in zip(out, self.strides, self.kernel, in_sp)]
            small = [t // 2 for t in total]
            self.begin = small if auto_pad == "SAME_UPPER" else [t - h for t, h in zip(total, small)]
            self.end = [t - b for t, b in zip(total, self.begin)]
        else:
            pads = [int(p) for p in (attr("pads", None) or [0] * 2 * nd)] if auto_pad != "VALID" else [0] * 2 * nd
            self.begin, self.end = pads[:nd], pads[nd:]
            out = []
            for i in range(nd):
                room = in_sp[i] + self.begin[i] + self.end[i] - span[i]
                o = (-(-room // self.strides[i]) if ceil_mode else room // self.strides[i]) + 1
                if ceil_mode and (o - 1) * self.strides[i] >= in_sp[i] + self.begin[i]:
                    o -= 1  # the last window must start inside the input or its head padding
                out.append(max(o, 0))
        self.out = out
        self.in_sp = list(in_sp)
        # tail padding so every window of the ceil-mode output fits
        self.extra = [max(0, (o - 1) * s + sp - (i + b + e)) for o, s, sp, i, b, e in
                      zip(out, self.strides, span, in_sp, self.begin, self.end)]

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
        """Per output position, how many taps fall in the input (or its explicit pads)."""
        total = np.ones((), dtype=np.int64)
        for i in range(len(self.kernel)):
            pos = (np.arange(self.out[i])[:, None] * self.strides[i]
                   + np.arange(self.kernel[i])[None, :] * self.dilations[i] - self.begin[i])
            lo, hi = (-self.begin[i], self.in_sp[i] + self.end[i]) if include_pad else (0, self.in_sp[i])
            c = ((pos >= lo) & (pos < hi)).sum(axis=1)
            total = total[..., None] * c
        return total


def lowest(dtype: np.dtype):
    """The identity of max for ``dtype``."""
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _separable(xp: np.ndarray, g: PoolGeometry, combine) -> np.ndarray:
    """Reduce the windows one spatial axis at a time (max and sum are separable over a box):
    k - 1 ``combine`` passes per axis instead of prod(k) - 1 over the whole output."""
    lead = xp.ndim - len(g.kernel)
    cur = xp
    for axis in range(len(g.kernel)):  # outer axes first: their views keep whole contiguous rows
        k, d, o, s = g.kernel[axis], g.dilations[axis], g.out[axis], g.strides[axis]
        index = [slice(None)] * cur.ndim
        res = None
        for i in range(k):
            index[lead + axis] = slice(i * d, i * d + (o - 1) * s + 1, s)
            view = cur[tuple(index)]
            if res is None:
                res = view.copy()
            else:
                combine(res, view, out=res)
        cur = res
    return cur


def max_pool(x: np.ndarray, g: PoolGeometry) -> np.ndarray:
    """Max over windows; padding never wins."""
    if min(g.out, default=1) <= 0:
        return np.zeros(x.shape[:2] + tuple(max(o, 0) for o in g.out), dtype=x.dtype)
    return _separable(g.padded(x, lowest(x.dtype)), g, np.maximum)


def sum_pool(x: np.ndarray, g: PoolGeometry) -> np.ndarray:
    """Sum over windows with zero padding."""
    if min(g.out, default=1) <= 0:
        return np.zeros(x.shape[:2] + tuple(max(o, 0) for o in g.out), dtype=x.dtype)
    return _separable(g.padded(x, 0), g, np.add)


class PoolKernel(NumpyKernel):
    """Base of the windowed pools: builds the geometry from the node's attributes."""

    def geometry(self, x: np.ndarray) -> PoolGeometry:
        return PoolGeometry(self.attr, x.shape[2:])
