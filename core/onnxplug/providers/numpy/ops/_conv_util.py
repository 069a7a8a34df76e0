"""Convolution arithmetic shared by Conv, ConvTranspose, ConvInteger, QLinearConv and Col2Im.

Conv is computed in one of three vectorised ways, all BLAS-backed or elementwise:
- 1x1 kernels: a plain (batched) matmul over the flattened spatial axes;
- depthwise (one input channel per group): a sum over kernel offsets of shifted views times the
  per-channel weight, with no im2col buffer;
- everything else: im2col built from ``sliding_window_view`` (one copy) and one batched matmul.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view


def conv_pads(node_attr, in_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """(pads_begin, pads_end) of a Conv-like node from ``auto_pad`` and ``pads``."""
    nd = len(kernel)
    auto_pad = node_attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(nd):
            out = -(-in_spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_spatial[i])
            small = total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else total - small)
            end.append(total - begin[-1])
        return begin, end
    if auto_pad == "VALID":
        return [0] * nd, [0] * nd
    pads = node_attr("pads", None)
    if pads is None:
        return [0] * nd, [0] * nd
    pads = [int(p) for p in pads]
    return pads[:nd], pads[nd:]


def spatial_attrs(node_attr, kernel: Sequence[int]) -> tuple[list[int], list[int]]:
    """(strides, dilations), defaulting to ones."""
    nd = len(kernel)
    strides = [int(s) for s in (node_attr("strides", None) or [1] * nd)]
    dilations = [int(d) for d in (node_attr("dilations", None) or [1] * nd)]
    return strides, dilations


def pad_spatial(x: np.ndarray, begin: Sequence[int], end: Sequence[int], value=0) -> np.ndarray:
    """``x`` with its trailing spatial axes padded by ``value`` (negative pads crop); no copy if no pads."""
    if not any(begin) and not any(end):
        return x
    nd = len(begin)
    lead = x.ndim - nd
    crop = tuple([slice(None)] * lead + [slice(max(0, -b), x.shape[lead + i] - max(0, -e))
                                         for i, (b, e) in enumerate(zip(begin, end))])
    x = x[crop]
    begin = [max(0, b) for b in begin]
    end = [max(0, e) for e in end]
    shape = list(x.shape[:lead]) + [x.shape[lead + i] + begin[i] + end[i] for i in range(nd)]
    out = np.full(shape, value, dtype=x.dtype) if value != 0 else np.zeros(shape, dtype=x.dtype)
    inner = tuple([slice(None)] * lead + [slice(begin[i], begin[i] + x.shape[lead + i]) for i in range(nd)])
    out[inner] = x
    return out


def windows(xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int]) -> np.ndarray:
    """View of shape (*lead, *out_spatial, *kernel) over the trailing spatial axes of ``xp``."""
    nd = len(kernel)
    lead = xp.ndim - nd
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    out = [(xp.shape[lead + i] - span[i]) // strides[i] + 1 for i in range(nd)]
    if min(out, default=1) <= 0:
        return np.zeros(xp.shape[:lead] + tuple(max(o, 0) for o in out) + tuple(kernel), xp.dtype)
    st = xp.strides
    shape = xp.shape[:lead] + tuple(out) + tuple(kernel)
    strides = st[:lead] + tuple(st[lead + i] * strides[i] for i in range(nd)) + \
        tuple(st[lead + i] * dilations[i] for i in range(nd))
    return as_strided(xp, shape, strides, writeable=False)


def im2col(xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
           group: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Columns of shape (N, group, C/group * prod(kernel), prod(out)) and the output spatial shape."""
    nd = len(kernel)
    n, c = xp.shape[:2]
    win = windows(xp, kernel, strides, dilations)  # (N, C, *out, *k)
    out_sp = win.shape[2:2 + nd]
    perm = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))
    cols = np.ascontiguousarray(win.transpose(perm))
    return cols.reshape(n, group, (c // group) * int(np.prod(kernel)), int(np.prod(out_sp))), out_sp


def conv_nd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
            dilations: Sequence[int], begin: Sequence[int], end: Sequence[int], group: int) -> np.ndarray:
    """N-D convolution (ONNX Conv semantics) of float arrays; keeps the input dtype."""
    n, c = x.shape[:2]
    m = w.shape[0]
    kernel = w.shape[2:]
    nd = len(kernel)
    if w.shape[1] * group != c:
        raise ValueError(f"Conv: input has {c} channels but weight expects {w.shape[1]} x group {group}")
    if m % group:
        raise ValueError(f"Conv: {m} output channels are not divisible by group {group}")
    xp = pad_spatial(x, begin, end)
    if all(k == 1 for k in kernel):
        y = _conv_1x1(xp, w, strides, group)
    elif w.shape[1] == 1 and group == c:
        y = _conv_depthwise(xp, w, strides, dilations)
    else:
        cols, out_sp = im2col(xp, kernel, strides, dilations, group)
        wm = w.reshape(group, m // group, -1)
        y = np.matmul(wm, cols).reshape((n, m) + tuple(out_sp))
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y


def _conv_1x1(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], group: int) -> np.ndarray:
    nd = len(strides)
    if any(s != 1 for s in strides):
        xp = xp[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    n, c = xp.shape[:2]
    out_sp = xp.shape[2:]
    m = w.shape[0]
    p = int(np.prod(out_sp))
    if group == 1:
        y = np.matmul(w.reshape(m, c), xp.reshape(n, c, p))
    else:
        y = np.matmul(w.reshape(group, m // group, c // group), xp.reshape(n, group, c // group, p))
    return y.reshape((n, m) + tuple(out_sp))


def _conv_depthwise(xp: np.ndarray, w: np.ndarray, strides: Sequence[int],
                    dilations: Sequence[int]) -> np.ndarray:
    """Depthwise conv (each group has one input channel, ``mult`` outputs): sum of shifted views."""
    n, c = xp.shape[:2]
    m = w.shape[0]
    mult = m // c
    kernel = w.shape[2:]
    nd = len(kernel)
    win = windows(xp, kernel, strides, dilations)  # (N, C, *out, *k)
    out_sp = win.shape[2:2 + nd]
    # weights as (C, mult, *k) broadcast against (N, C, 1, *out)
    wk = w.reshape((c, mult) + tuple(kernel))
    y = np.zeros((n, c, mult) + tuple(out_sp), dtype=np.result_type(xp.dtype, w.dtype))
    tmp = np.empty_like(y)
    expand = (slice(None), slice(None), None)
    for idx in np.ndindex(*kernel):
        sl = win[(Ellipsis,) + idx][expand]  # (N, C, 1, *out)
        wv = wk[(slice(None), slice(None)) + idx].reshape((c, mult) + (1,) * nd)
        np.multiply(sl, wv, out=tmp)
        y += tmp
    return y.reshape((n, m) + tuple(out_sp))
