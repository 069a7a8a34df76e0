"""Depthwise convolution (one input channel per group) as sums of shifted inputs, in cache-sized units.

Work goes in units of one image and a block of channels. A unit copies its channels, padded, into
a small scratch buffer: that is the only read of the input, and no padded copy of the whole tensor
is made. Each kernel offset then costs one multiply and one add over long contiguous runs, and the
unit's result is written to the output, where the bias and the caller's epilogue (residual,
activation) run while it is still in cache. Two scratch layouts:

- rows: per channel, the padded plane split into stride phases and flattened, so every offset
  reads one contiguous row per channel (long rows: large images);
- channels last: (H, W, C), so every offset reads runs of C (or W * C at stride 1) values with
  one weight per channel (small images with many channels, where rows would be short).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from onnxplug.providers.numpy.blas import parallel_for

#: Applied in place to one unit's output ``view``; ``index`` selects the same elements of the full
#: (N, M, *spatial) output, for a residual.
Epilogue = Callable[[np.ndarray, tuple], None]

#: Bytes of scratch, accumulator and temporary that one unit keeps in cache: every kernel offset
#: makes two passes over them.
BLOCK_BYTES = 1 << 20

#: 2-D images with at most this many padded positions use the channels-last scratch: their rows
#: are too short for numpy to run fast on (measured: 14x14 and 7x7 planes 1.5-3x faster).
CHANNELS_LAST_MAX_PLANE = 32 * 32


class _Shape:
    """Sizes of one depthwise convolution."""

    def __init__(self, x: np.ndarray, w: np.ndarray, strides: Sequence[int], dilations: Sequence[int],
                 begin: Sequence[int], end: Sequence[int]) -> None:
        self.n, self.c = x.shape[:2]
        self.mult = w.shape[0] // self.c
        self.kernel = tuple(w.shape[2:])
        self.nd = len(self.kernel)
        self.in_sp = x.shape[2:]
        self.strides, self.dilations, self.begin = list(strides), list(dilations), list(begin)
        self.padded = [self.in_sp[i] + begin[i] + end[i] for i in range(self.nd)]
        span = [(k - 1) * d + 1 for k, d in zip(self.kernel, dilations)]
        self.out_sp = tuple(max(0, (self.padded[i] - span[i]) // strides[i] + 1) for i in range(self.nd))

    def input_slices(self, sizes: Sequence[int], phase: Sequence[int], steps: Sequence[int]
                     ) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
        """Where the input lands in a scratch axis set holding padded positions ``phase + step * j``
        (j < ``sizes``): (scratch slices, strided input slices), or None if it lands nowhere."""
        dst, src = [], []
        for p, s, b, n_in, n_pad, size in zip(phase, steps, self.begin, self.in_sp, self.padded, sizes):
            lo = max(0, -(-(b - p) // s))  # first j whose padded position is input
            hi = min(size, -(-(min(n_pad, n_in + b) - p) // s))
            if hi <= lo:
                return None
            start = p + s * lo - b
            dst.append(slice(lo, hi))
            src.append(slice(start, start + s * (hi - lo - 1) + 1, s))
        return tuple(dst), tuple(src)


def depthwise_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, strides: Sequence[int],
                   dilations: Sequence[int], begin: Sequence[int], end: Sequence[int],
                   epilogue: Epilogue | None = None) -> np.ndarray:
    """Depthwise Conv of ``x`` (N, C, *spatial) by ``w`` (C * mult, 1, *kernel) with pads
    ``begin``/``end`` (negative ones crop); returns a new (N, C * mult, *out) array."""
    sh = _Shape(x, w, strides, dilations, begin, end)
    out = np.empty((sh.n, sh.c * sh.mult) + sh.out_sp, dtype=np.result_type(x.dtype, w.dtype))
    if out.size == 0:
        return out
    wk = w.reshape(sh.c, sh.mult, -1).astype(out.dtype, copy=False)
    if sh.nd == 2 and sh.mult == 1 and math.prod(sh.padded) <= CHANNELS_LAST_MAX_PLANE:
        block, compute = _channels_last(sh, x, wk, out)
    else:
        block, compute = _phase_rows(sh, x, wk, out)
    n_blocks = -(-sh.c // block)
    bk = None if bias is None else bias.reshape((sh.c * sh.mult,) + (1,) * sh.nd).astype(out.dtype, copy=False)

    def unit(u: int) -> None:
        i, blk = divmod(u, n_blocks)
        c0, c1 = blk * block, min(sh.c, blk * block + block)
        compute(i, c0, c1)
        index = (i, slice(c0 * sh.mult, c1 * sh.mult))
        if bk is not None:
            out[index] += bk[index[1]]
        if epilogue is not None:
            epilogue(out[index], index)

    # numpy's ufuncs release the GIL, so units run in parallel on the product threads
    units = sh.n * n_blocks
    if not parallel_for(units, unit, out.size * len(wk[0, 0]) * 4):
        for u in range(units):
            unit(u)
    return out


def _phase_rows(sh: _Shape, x: np.ndarray, wk: np.ndarray, out: np.ndarray
                ) -> tuple[int, Callable[[int, int, int], None]]:
    """(channels per unit, unit body) for the rows scratch: (phases, C, *phase rows)."""
    nd, strides, mult, out_sp = sh.nd, sh.strides, sh.mult, sh.out_sp
    rows = [-(-sh.padded[i] // strides[i]) for i in range(nd)]
    row_strides = [math.prod(rows[i + 1:]) for i in range(nd)]
    plane = math.prod(rows)
    length = sum((o - 1) * r for o, r in zip(out_sp, row_strides)) + 1
    taps = []  # (phase index, offset into its flattened rows, weight index)
    for w_idx, idx in enumerate(np.ndindex(*sh.kernel)):
        pos = [i * d for i, d in zip(idx, sh.dilations)]
        phase = int(np.ravel_multi_index([p % s for p, s in zip(pos, strides)], strides))
        taps.append((phase, sum((p // s) * r for p, s, r in zip(pos, strides, row_strides)), w_idx))
    copies = []
    for phase_idx, phase in enumerate(np.ndindex(*strides)):
        found = sh.input_slices(rows, phase, strides)
        if found is not None:
            copies.append((phase_idx, *found))
    n_phases = math.prod(strides)
    # zero-filled scratch only when padding or uncovered phase rows leave gaps
    covered = sum(math.prod(s.stop - s.start for s in dst) for _, dst, _ in copies)
    fill = np.zeros if covered < n_phases * plane else np.empty
    per_channel = (n_phases * plane + 2 * mult * out_sp[0] * row_strides[0]) * out.itemsize
    multiply = np.multiply

    def compute(i: int, c0: int, c1: int) -> None:
        cb = c1 - c0
        scratch = fill((n_phases, cb) + tuple(rows), dtype=out.dtype)
        for phase_idx, dst, src in copies:
            scratch[(phase_idx, slice(None)) + dst] = x[(i, slice(c0, c1)) + src]
        flat = scratch.reshape(n_phases, cb, 1, plane)
        acc = np.empty((cb, mult, out_sp[0] * row_strides[0]), dtype=out.dtype)
        tmp = np.empty((cb, mult, length), dtype=out.dtype)
        head = acc[..., :length]
        for k, (phase_idx, off, w_idx) in enumerate(taps):
            seg = flat[phase_idx, :, :, off:off + length]
            multiply(seg, wk[c0:c1, :, w_idx, None], out=head if k == 0 else tmp)
            if k:
                head += tmp
        grid = acc.reshape((cb, mult, out_sp[0]) + tuple(rows[1:]))
        view = out[i, c0 * mult:c1 * mult].reshape((cb, mult) + out_sp)
        np.copyto(view, grid[(Ellipsis,) + tuple(slice(0, o) for o in out_sp[1:])])

    return max(1, min(sh.c, BLOCK_BYTES // per_channel)), compute


def _every(start: int, step: int, count: int) -> slice:
    """``count`` positions from ``start``, ``step`` apart."""
    return slice(start, start + step * (count - 1) + 1, step)


def _channels_last(sh: _Shape, x: np.ndarray, wk: np.ndarray, out: np.ndarray
                   ) -> tuple[int, Callable[[int, int, int], None]]:
    """(channels per unit, unit body) for the channels-last scratch (H, W, C) of 2-D images."""
    (sh0, sw0), (dh, dw), (oh, ow) = sh.strides, sh.dilations, sh.out_sp
    placed = sh.input_slices(sh.padded, (0, 0), (1, 1))
    gaps = placed is None or any(s.stop - s.start < p for s, p in zip(placed[0], sh.padded))
    fill = np.zeros if gaps else np.empty
    taps = [(_every(kh * dh, sh0, oh), _every(kw * dw, sw0, ow), k)
            for k, (kh, kw) in enumerate(np.ndindex(*sh.kernel))]
    # at stride 1 a row of the scratch is W * C contiguous values: weights tiled to match make
    # each offset one long run per output row instead of runs of C
    rows_merge = sw0 == 1
    per_channel = (math.prod(sh.padded) + 2 * oh * ow) * out.itemsize
    multiply = np.multiply

    def compute(i: int, c0: int, c1: int) -> None:
        cb = c1 - c0
        scratch = fill((*sh.padded, cb), dtype=out.dtype)
        if placed is not None:
            scratch[placed[0]] = x[i, c0:c1][(slice(None),) + placed[1]].transpose(1, 2, 0)
        weights = wk[c0:c1, 0].T  # (taps, cb)
        if rows_merge:
            weights = np.tile(weights, (1, ow))
        acc = np.empty((oh, ow * cb), dtype=out.dtype)
        tmp = np.empty_like(acc)
        shaped = (oh, ow * cb) if rows_merge else (oh, ow, cb)
        a, t = acc.reshape(shaped), tmp.reshape(shaped)
        for k, (rows, cols, w_idx) in enumerate(taps):
            multiply(scratch[rows, cols].reshape(shaped), weights[w_idx], out=a if k == 0 else t)
            if k:
                a += t
        out[i, c0:c1] = acc.reshape(oh, ow, cb).transpose(2, 0, 1)

    return max(1, min(sh.c, BLOCK_BYTES // per_channel)), compute
