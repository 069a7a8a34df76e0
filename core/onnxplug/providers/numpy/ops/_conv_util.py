"""Convolution arithmetic shared by Conv, ConvTranspose, ConvInteger, QLinearConv and Col2Im.

Conv is computed in one of three vectorised ways, all BLAS-backed or elementwise:
- 1x1 kernels: a plain (batched) matmul over the flattened spatial axes;
- depthwise (one input channel per group): a sum over kernel offsets of shifted views times the
  per-channel weight, with no im2col buffer;
- everything else: im2col from a strided window view (one copy) and one batched matmul.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from onnxplug.providers.numpy.blas import PRODUCT_THREADS, matmul, parallel_for
from numpy.lib.stride_tricks import as_strided


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
        y = _depthwise(xp, w, strides, dilations)
    else:
        y = _conv_im2col(xp, w, kernel, strides, dilations, group)
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y


def _conv_im2col(xp: np.ndarray, w: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], group: int) -> np.ndarray:
    """im2col + one matmul per group. Large convolutions go in units of one image (or a band of
    output rows, when there are fewer images than threads) on each product thread, so the column
    copy runs in parallel too and its buffer stays small."""
    n, m, nd = xp.shape[0], w.shape[0], len(kernel)
    wm = w.reshape(group, m // group, -1)
    win = windows(xp, kernel, strides, dilations)  # (N, C, *out, *k)
    out_sp = win.shape[2:2 + nd]
    y = np.empty((n, group, m // group, int(np.prod(out_sp))), dtype=np.result_type(xp.dtype, w.dtype))
    perm = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))
    inner = int(np.prod(out_sp[1:]))
    bands = min(max(1, -(-PRODUCT_THREADS.threads // n)), out_sp[0]) if out_sp[0] else 1
    rows = -(-out_sp[0] // bands) if out_sp[0] else 0

    def unit(u: int) -> None:
        i, band = divmod(u, bands)
        r0, r1 = band * rows, min(band * rows + rows, out_sp[0])
        if r0 < r1:
            cols = np.ascontiguousarray(win[i:i + 1, :, r0:r1].transpose(perm))
            np.matmul(wm, cols.reshape(group, wm.shape[-1], -1), out=y[i, :, :, r0 * inner:r1 * inner])

    if not parallel_for(n * bands, unit, y.size * wm.shape[-1]):
        cols, _ = im2col(xp, kernel, strides, dilations, group)
        matmul(wm, cols, out=y)
    return y.reshape((n, m) + tuple(out_sp))


def _conv_1x1(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], group: int) -> np.ndarray:
    nd = len(strides)
    if any(s != 1 for s in strides):
        xp = xp[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    n, c = xp.shape[:2]
    out_sp = xp.shape[2:]
    m = w.shape[0]
    p = int(np.prod(out_sp))
    if group == 1:
        y = matmul(w.reshape(m, c), xp.reshape(n, c, p))
    else:
        y = matmul(w.reshape(group, m // group, c // group), xp.reshape(n, group, c // group, p))
    return y.reshape((n, m) + tuple(out_sp))


def _phases(xp: np.ndarray, strides: Sequence[int]) -> np.ndarray:
    """Polyphase split: (N, C, *P) -> (*s, N, C, *ceil(P/s)), so a strided window is a plain shift."""
    nd = len(strides)
    lead = xp.shape[:2]
    if all(s == 1 for s in strides):
        return np.ascontiguousarray(xp)
    padded = [-(-xp.shape[2 + i] // s) * s for i, s in enumerate(strides)]
    if list(xp.shape[2:]) != padded:
        full = np.zeros(lead + tuple(padded), dtype=xp.dtype)
        full[(slice(None), slice(None)) + tuple(slice(0, n) for n in xp.shape[2:])] = xp
        xp = full
    split = lead + tuple(v for i, s in enumerate(strides) for v in (padded[i] // s, s))
    perm = tuple(3 + 2 * i for i in range(nd)) + (0, 1) + tuple(2 + 2 * i for i in range(nd))
    return np.ascontiguousarray(xp.reshape(split).transpose(perm))


def _depthwise_out_shape(xp: np.ndarray, w: np.ndarray, strides: Sequence[int],
                         dilations: Sequence[int]) -> tuple[int, ...]:
    kernel = w.shape[2:]
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    return (xp.shape[0], w.shape[0]) + tuple(max(0, (xp.shape[2 + i] - span[i]) // strides[i] + 1)
                                             for i in range(len(kernel)))


def _depthwise(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int]) -> np.ndarray:
    """Depthwise conv into a fresh output array."""
    out = np.empty(_depthwise_out_shape(xp, w, strides, dilations), dtype=np.result_type(xp.dtype, w.dtype))
    _conv_depthwise(xp, w, strides, dilations, out)
    return out


#: Bytes of input rows, accumulator and temporary that one block of channels of a depthwise conv
#: keeps in cache: every kernel offset makes two passes over them, so they should not go to memory.
DEPTHWISE_BLOCK_BYTES = 2 << 20


def _conv_depthwise(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                    out: np.ndarray) -> None:
    """Depthwise conv (one input channel per group, ``mult`` outputs each) as a sum of shifted rows,
    written into ``out``.

    The input is split into stride phases and flattened, so every kernel offset reads one long
    contiguous row per channel; the result is computed over full padded rows and cropped once.
    Channels go in cache-sized blocks, one image at a time (images in parallel when large).
    """
    n, c = xp.shape[:2]
    mult = w.shape[0] // c
    kernel = w.shape[2:]
    nd = len(kernel)
    out_sp = out.shape[2:]
    if min(out_sp) <= 0:
        return
    ph = _phases(xp, strides)
    rows = ph.shape[-nd:]
    row_strides = [int(np.prod(rows[i + 1:])) for i in range(nd)]
    strided = any(s != 1 for s in strides)
    flat = ph.reshape(ph.shape[:nd + 2] + (-1,)) if strided else ph.reshape(n, c, -1)
    length = sum((o - 1) * r for o, r in zip(out_sp, row_strides)) + 1
    y = np.empty((n, c, mult, out_sp[0] * row_strides[0]), dtype=out.dtype)
    wk = w.reshape((c, mult, -1))
    taps = []  # (rows of the tap's stride phase, offset into them, weight index)
    for flat_idx, idx in enumerate(np.ndindex(*kernel)):
        pos = [i * d for i, d in zip(idx, dilations)]
        phase = tuple(p % s for p, s in zip(pos, strides))
        off = sum((p // s) * r for p, s, r in zip(pos, strides, row_strides))
        taps.append((flat[phase] if strided else flat, off, flat_idx))
    block = max(1, min(c, DEPTHWISE_BLOCK_BYTES // (3 * mult * length * y.itemsize)))
    multiply = np.multiply

    def image(i: int) -> None:
        tmp = np.empty((block, mult, length), dtype=out.dtype)
        for c0 in range(0, c, block):
            c1 = min(c, c0 + block)
            acc = y[i, c0:c1, :, :length]
            t = tmp[:c1 - c0]
            for k, (src, off, widx) in enumerate(taps):
                seg = src[i, c0:c1, None, off:off + length]
                if k == 0:
                    multiply(seg, wk[c0:c1, :, widx, None], out=acc)
                else:
                    multiply(seg, wk[c0:c1, :, widx, None], out=t)
                    acc += t

    # numpy's ufuncs release the GIL, so images run in parallel on the product threads
    if not parallel_for(n, image, y.size * len(taps) * 4):
        for i in range(n):
            image(i)
    y = y.reshape((n, c, mult, out_sp[0]) + tuple(rows[1:]))
    y = y[(Ellipsis,) + tuple(slice(0, o) for o in out_sp[1:])] if nd > 1 else y
    np.copyto(out.reshape((n, c, mult) + tuple(out_sp)), y)


def scatter_cols(cols: np.ndarray, full_sp: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], in_sp: Sequence[int], offset: Sequence[int] | None = None) -> np.ndarray:
    """col2im: add columns (N, C, *kernel, *in_sp) into an image (N, C, *full_sp), one kernel offset at a time.

    Column position ``p`` of kernel offset ``i`` lands at ``offset + p * stride + i * dilation``.
    """
    n, c = cols.shape[:2]
    offset = offset or [0] * len(kernel)
    out = np.zeros((n, c) + tuple(full_sp), dtype=cols.dtype)
    for idx in np.ndindex(*kernel):
        dst = tuple(slice(o + i * d, o + i * d + (p - 1) * s + 1, s)
                    for o, i, d, p, s in zip(offset, idx, dilations, in_sp, strides))
        out[(slice(None), slice(None)) + dst] += cols[(slice(None), slice(None)) + idx]
    return out


def conv_transpose_nd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
                      dilations: Sequence[int], begin: Sequence[int], out_sp: Sequence[int],
                      group: int) -> np.ndarray:
    """ConvTranspose: one matmul to columns, then col2im, then a crop of ``begin`` and ``out_sp``."""
    n, c = x.shape[:2]
    in_sp = x.shape[2:]
    kernel = w.shape[2:]
    nd = len(kernel)
    mg = w.shape[1]
    m = mg * group
    if w.shape[0] != c:
        raise ValueError(f"ConvTranspose: input has {c} channels but weight has {w.shape[0]}")
    p = int(np.prod(in_sp))
    kk = int(np.prod(kernel))
    wt = w.reshape(group, c // group, mg * kk).transpose(0, 2, 1)  # (G, Mg*K, Cg)
    cols = matmul(wt, x.reshape(n, group, c // group, p))  # (N, G, Mg*K, P)
    cols = cols.reshape((n, m) + tuple(kernel) + tuple(in_sp))
    full = [(q - 1) * s + (k - 1) * d + 1 for q, s, k, d in zip(in_sp, strides, kernel, dilations)]
    shift = [max(0, -bg) for bg in begin]  # output_shape larger than the full result: zeros first
    need = [max(f + sh, bg + sh + o) for f, bg, o, sh in zip(full, begin, out_sp, shift)]
    img = scatter_cols(cols, need, kernel, strides, dilations, in_sp, shift)
    y = img[(slice(None), slice(None)) + tuple(slice(bg + sh, bg + sh + o)
                                               for bg, sh, o in zip(begin, shift, out_sp))]
    y = np.ascontiguousarray(y)
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y
