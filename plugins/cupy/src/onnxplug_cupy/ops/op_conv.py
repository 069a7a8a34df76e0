"""Conv, the project's FusedConv, and ConvTranspose: im2col + one batched cuBLAS GEMM, and its inverse.

im2col here is a strided window view of the padded input (no copy) made contiguous in the column
layout (one copy kernel); the GEMM multiplies (group, M/group, C/group * k) weights by
(N, group, C/group * k, out) columns in one strided-batched call. 1x1 kernels skip im2col.
ConvTranspose is GEMM into columns and col2im as one strided add per kernel offset.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

from onnxplug_sdk import GraphView, Node, conv_transpose_pads, output_size, resolve_pads

from onnxplug_cupy.codegen.expressions import FUSED_DOMAIN
from onnxplug_cupy.ops._base import FLOAT, CupyKernel, same_dtype
from onnxplug_cupy.ops.op_matmul import activation_of, apply_activation
from onnxplug_cupy.provider import CupyProvider


def pad_spatial(xp: Any, x: Any, begin: Sequence[int], end: Sequence[int], value: Any = 0) -> Any:
    """``x`` with its trailing ``len(begin)`` axes padded by ``value`` (negative pads crop)."""
    if not any(begin) and not any(end):
        return x
    lead = x.ndim - len(begin)
    crop = (slice(None),) * lead + tuple(slice(max(0, -b), x.shape[lead + i] - max(0, -e))
                                         for i, (b, e) in enumerate(zip(begin, end)))
    x = x[crop]
    width = [(0, 0)] * lead + [(max(0, b), max(0, e)) for b, e in zip(begin, end)]
    return xp.pad(x, width, mode="constant", constant_values=value)


def windows(xp: Any, x: Any, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]) -> Any:
    """A view of shape (*lead, *out, *kernel) over the trailing spatial axes of ``x``."""
    nd = len(kernel)
    lead = x.ndim - nd
    out = [output_size(x.shape[lead + i], k, s, d) for i, (k, s, d) in enumerate(zip(kernel, strides, dilations))]
    st = x.strides
    shape = tuple(x.shape[:lead]) + tuple(out) + tuple(kernel)
    step = tuple(st[:lead]) + tuple(st[lead + i] * strides[i] for i in range(nd)) + \
        tuple(st[lead + i] * dilations[i] for i in range(nd))
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=step)


def conv(xp: Any, x: Any, w: Any, b: Any, strides: Sequence[int], dilations: Sequence[int],
         begin: Sequence[int], end: Sequence[int], group: int) -> Any:
    """ONNX Conv of float arrays (N, C, *spatial) by (M, C/group, *kernel)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    kernel = tuple(w.shape[2:])
    nd = len(kernel)
    if w.shape[1] * group != c or m % group:
        raise ValueError(f"Conv: input channels {c}, weight {list(w.shape)} and group {group} do not fit")
    padded = pad_spatial(xp, x, begin, end)
    if all(k == 1 for k in kernel):
        if any(s != 1 for s in strides):
            padded = padded[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
        out_sp = tuple(padded.shape[2:])
        cols = xp.ascontiguousarray(padded).reshape(n, group, c // group, math.prod(out_sp))
    else:
        win = windows(xp, padded, kernel, strides, dilations)  # (N, C, *out, *k)
        out_sp = tuple(win.shape[2:2 + nd])
        perm = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))  # (N, C, *k, *out)
        cols = xp.ascontiguousarray(win.transpose(perm)).reshape(
            n, group, (c // group) * math.prod(kernel), math.prod(out_sp))
    y = xp.matmul(w.reshape(group, m // group, -1), cols)  # (N, group, M/group, out)
    y = y.reshape((n, m) + out_sp)
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y


class _ConvBase(CupyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if not same_dtype(view, node, FLOAT):
            return False
        return node.domain != FUSED_DOMAIN or activation_of(node) is not None

    def geometry(self, x: Any, w: Any) -> tuple[list[int], list[int], tuple[int, ...], tuple[int, ...]]:
        kernel = [int(k) for k in w.shape[2:]]
        nd = len(kernel)
        strides = [int(s) for s in (self.attr("strides", None) or [1] * nd)]
        dilations = [int(d) for d in (self.attr("dilations", None) or [1] * nd)]
        begin, end = resolve_pads(self.attr("auto_pad", "NOTSET"), x.shape[2:], kernel, strides, dilations,
                                  self.attr("pads", None))
        return strides, dilations, begin, end


@CupyProvider.kernel("Conv")
@CupyProvider.kernel("FusedConv", domain=FUSED_DOMAIN)
class Conv(_ConvBase):
    """Conv (and FusedConv: Conv, plus the optional residual Z, then its activation)."""

    def run(self, x: Any, w: Any, b: Any = None, z: Any = None) -> Any:
        strides, dilations, begin, end = self.geometry(x, w)
        y = conv(self.xp, x, w, b, strides, dilations, begin, end, int(self.attr("group", 1)))
        if z is not None:
            y += z
        found = activation_of(self.node) if self.node.domain == FUSED_DOMAIN else None
        return apply_activation(self.xp, y, *found) if found and found[0] else y


@CupyProvider.kernel("ConvTranspose")
class ConvTranspose(_ConvBase):
    """Columns = W^T X in one batched GEMM, then col2im; pads from pads, output_shape or auto_pad."""

    def run(self, x: Any, w: Any, b: Any = None) -> Any:
        xp = self.xp
        kernel = [int(k) for k in w.shape[2:]]
        nd = len(kernel)
        strides = [int(s) for s in (self.attr("strides", None) or [1] * nd)]
        dilations = [int(d) for d in (self.attr("dilations", None) or [1] * nd)]
        adj = [int(a) for a in (self.attr("output_padding", None) or [0] * nd)][:nd]
        group = int(self.attr("group", 1))
        n, c = x.shape[:2]
        in_sp = tuple(x.shape[2:])
        m = w.shape[1] * group
        # the canvas the taps are added into: the uncropped output
        full = [s * (i - 1) + a + (k - 1) * d + 1 for s, i, a, k, d in zip(strides, in_sp, adj, kernel, dilations)]
        begin, _, out_sp = conv_transpose_pads(in_sp, kernel, strides, dilations, adj,
                                               self.attr("auto_pad", "NOTSET"), self.attr("pads", None),
                                               self.attr("output_shape", None))
        p = math.prod(in_sp)
        wg = w.reshape(group, c // group, (m // group) * math.prod(kernel)).transpose(0, 2, 1)
        cols = xp.matmul(wg, x.reshape(n, group, c // group, p))  # (N, group, M/group * k, P)
        cols = cols.reshape((n, m) + tuple(kernel) + in_sp)
        canvas = xp.zeros((n, m) + tuple(full), dtype=x.dtype)
        for offset in itertools.product(*(range(k) for k in kernel)):
            target = tuple(slice(o * d, o * d + (i - 1) * s + 1, s)
                           for o, d, i, s in zip(offset, dilations, in_sp, strides))
            canvas[(slice(None), slice(None)) + target] += cols[(slice(None), slice(None)) + offset]
        y = pad_spatial(xp, canvas, [-bg for bg in begin],
                        [o + bg - f for o, bg, f in zip(out_sp, begin, full)])
        y = xp.ascontiguousarray(y)
        if b is not None:
            y += b.reshape((m,) + (1,) * nd)
        return y
