"""Depthwise convolution (one input channel per group) as small matmuls per channel, in large units.

Work goes in units of one image and a block of channels, with one of three formulations: shifted
rows (stride-1 2-D: per kernel column a shifted copy of the padded rows, then one batched matmul
per kernel row, summed); columns (any stride, dilation, rank: the channels copied into stride-phase
rows, then one batched ``weights (channels, mult, taps + bias) @ columns`` sums the taps and adds
the bias); channels-last (outputs of a few dozen positions per channel, where a BLAS call per
channel costs more than its arithmetic: a multiply and an add per tap over runs of channels). The
BLAS formulations move less memory and make fewer numpy calls than a multiply-add per tap; units
are large and their temporaries come from a buffer each thread keeps. The caller's epilogue
(residual, activation) runs on each unit's output.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for
from onnxplug.providers.numpy.kernels.conv.depthwise_plan import geometry
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning

#: Applied in place to one unit's output ``view``; ``index`` selects the same elements of the full
#: (N, M, *spatial) output, for a residual.
Epilogue = Callable[[np.ndarray, tuple], None]

# Bytes of scratch, columns and result of one unit (``tuning.depthwise_block_bytes``): few enough
# units that their ~10 numpy calls each cost little next to the copies.

# 2-D outputs with at most ``tuning.depthwise_channels_last_max_out`` (64) positions per channel
# use the channels-last scratch: one BLAS call per channel costs more than its few dozen
# multiply-adds (7x7 outputs run faster channels-last, 14x14 ones with columns). Stride-1 2-D
# convolutions use the shifted-rows formulation (``tuning.depthwise_shifted_rows``): ~20% less
# memory traffic than columns.

# Weight of a depthwise multiply-add against a large matmul's in the work given to
# ``parallel_for`` (``tuning.depthwise_mac_weight``): only layers of ~0.5-1M outputs or more
# (batched ones) use both product threads. The copies and gemvs are memory-bound, so splitting
# smaller layers gains nothing.

#: Per-thread workspace kept across calls: eight units of the default size.
_WORKSPACE = ThreadScratch(8 * DEFAULT_TUNING.depthwise_block_bytes)


def _workspace(dtype: np.dtype, size: int) -> np.ndarray:
    """``size`` elements of ``dtype`` from a buffer this thread keeps across units and calls (see
    ThreadScratch: fresh multi-MB temporaries per unit cost page faults)."""
    return _WORKSPACE.get(dtype, size)


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
                   epilogue: Epilogue | None = None, tuning: NumpyTuning = DEFAULT_TUNING) -> np.ndarray:
    """Depthwise Conv of ``x`` (N, C, *spatial) by ``w`` (C * mult, 1, *kernel) with pads
    ``begin``/``end`` (negative ones crop); returns a new (N, C * mult, *out) array."""
    sh = _Shape(x, w, strides, dilations, begin, end)
    dtype = np.result_type(x.dtype, w.dtype)
    out = np.empty((sh.n, sh.c * sh.mult) + sh.out_sp, dtype=dtype)
    if out.size == 0:
        return out
    if sh.nd == 2 and sh.mult == 1 and math.prod(sh.out_sp) <= tuning.depthwise_channels_last_max_out:
        per_channel, compute = _channels_last(sh, x, w, bias, out)
    elif tuning.depthwise_shifted_rows and sh.nd == 2 and sh.strides == [1, 1] and min(sh.begin) >= 0 and min(end) >= 0:
        per_channel, compute = _shifted_rows(sh, x, w, bias, out)
    else:
        per_channel, compute = _columns(sh, x, w, bias, out)
    block = max(1, min(sh.c, tuning.depthwise_block_bytes // per_channel))
    n_blocks = -(-sh.c // block)
    work = out.size * math.prod(sh.kernel) * tuning.depthwise_mac_weight
    threads = PRODUCT_THREADS.threads
    if sh.n % threads and work >= PRODUCT_THREADS.split_product_macs:
        # as many units on every thread: blocks per image a multiple of what images leave over
        spread = threads // math.gcd(sh.n, threads)
        n_blocks = min(sh.c, -(-n_blocks // spread) * spread)
    block = -(-sh.c // n_blocks)
    n_blocks = -(-sh.c // block)

    def unit(u: int) -> None:
        i, blk = divmod(u, n_blocks)
        c0, c1 = blk * block, min(sh.c, blk * block + block)
        compute(i, c0, c1)
        if epilogue is not None:
            index = (i, slice(c0 * sh.mult, c1 * sh.mult))
            epilogue(out[index], index)

    # numpy's copies and single-threaded BLAS release the GIL, so units run in parallel on the
    # product threads
    units = sh.n * n_blocks
    if not parallel_for(units, unit, work):
        for u in range(units):
            unit(u)
    return out


def _shifted_rows(sh: _Shape, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray
                  ) -> tuple[int, Callable[[int, int, int], None]]:
    """(bytes per channel of a unit, unit body writing out[i, channels c0:c1]) for stride-1 2-D
    convolutions with non-negative pads: per channel and kernel column j, a copy P_j of the padded
    input rows shifted left by j * dilation and cut to the output width, so that kernel row i
    reads rows i * dilation on of every P_j as one run laid out as the output. One batched matmul
    ``weights (rows, channels, mult, cols) @ P (rows, channels, cols, run)`` (a gemv per kernel row
    and channel, each P_j row read in place) gives a partial output per kernel row; their sum is
    the output. kw copies of the input instead of kh * kw copies of the output."""
    (kh, kw), (dh, dw), (oh, ow) = sh.kernel, sh.dilations, sh.out_sp
    (h, w_in), (pt, pl) = sh.in_sp, sh.begin
    mult, dtype = sh.mult, out.dtype
    rows = sh.padded[0]  # = oh + (kh - 1) * dh
    plane, length = rows * ow, oh * ow
    wt = np.ascontiguousarray(w.reshape(sh.c, mult, kh, kw).transpose(2, 0, 1, 3), dtype=dtype)
    bk = None if bias is None else bias.reshape(sh.c, mult, 1).astype(dtype, copy=False)
    # per kernel column: output columns that hold input, and the input columns they start from
    spans = []  # (output columns [lo, hi) that hold input, first input column, padding columns)
    for j in range(kw):
        lo, hi = max(0, pl - j * dw), min(ow, w_in + pl - j * dw)
        hi = max(hi, lo)
        pads = [cols for cols in (slice(0, lo), slice(hi, ow)) if cols.start < cols.stop]
        spans.append((lo, hi, lo + j * dw - pl, pads))
    it = out.itemsize

    def compute(i: int, c0: int, c1: int) -> None:
        cb = c1 - c0
        work = _workspace(dtype, cb * (kw * plane + kh * mult * length))
        shifted = work[:cb * kw * plane].reshape(cb, kw, rows, ow)
        if pt:
            shifted[:, :, :pt] = 0
        if pt + h < rows:
            shifted[:, :, pt + h:] = 0
        xs = x[i, c0:c1]
        for j, (lo, hi, src, pads) in enumerate(spans):
            if lo < hi:
                shifted[:, j, pt:pt + h, lo:hi] = xs[:, :, src:src + hi - lo]
            for cols in pads:
                shifted[:, j, pt:pt + h, cols] = 0
        runs = np.ndarray((kh, cb, kw, length), dtype, buffer=shifted,
                          strides=(dh * ow * it, kw * plane * it, plane * it, it))
        partial = work[cb * kw * plane:].reshape(kh, cb, mult, length)
        np.matmul(wt[:, c0:c1], runs, out=partial)
        target = out[i, c0 * mult:c1 * mult].reshape(cb, mult, length)
        np.add.reduce(partial, axis=0, out=target)
        if bk is not None:
            target += bk[c0:c1]

    return (kw * plane + kh * mult * length) * it, compute


def _columns(sh: _Shape, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray
             ) -> tuple[int, Callable[[int, int, int], None]]:
    """(bytes per channel of a unit, unit body writing out[i, channels c0:c1]) for the columns
    formulation: phase-row scratch, one copy per tap group, one batched matmul."""
    plan, order, tail = geometry(sh)
    mult, out_sp, dtype, itemsize = sh.mult, sh.out_sp, out.dtype, out.itemsize
    stored, plane, phase_len, length = plan.stored, plan.plane, plan.phase_len, plan.length
    n_phases = math.prod(sh.strides)
    n_taps = len(order)
    wk = w.reshape(sh.c, mult, -1)[:, :, order]
    if bias is not None:  # the bias is one more tap, on a row of ones
        wk = np.concatenate([wk, bias.reshape(sh.c, mult, 1)], axis=2)
    wk = np.ascontiguousarray(wk, dtype=dtype)
    k = wk.shape[2]
    out_len = length if plan.direct else plan.grid_len

    def compute(i: int, c0: int, c1: int) -> None:
        cb = c1 - c0
        run = cb * phase_len  # a tap's columns for all the unit's channels, phase rows apart
        work = _workspace(dtype, n_phases * run + tail + k * run)
        scratch = work[:n_phases * run + tail]
        shaped = scratch[:n_phases * run].reshape(n_phases, cb, phase_len)[:, :, plan.margin:plan.margin + plane]
        shaped = shaped.reshape((n_phases, cb) + tuple(stored))
        for phase_idx, gap in plan.zeros:
            shaped[(phase_idx, slice(None)) + gap] = 0
        for phase_idx, dst, src in plan.copies:
            shaped[(phase_idx, slice(None)) + dst] = x[(i, slice(c0, c1)) + src]
        cols = work[n_phases * run + tail:].reshape(k, run)
        t0 = 0
        for g, start in zip(plan.groups, plan.starts):
            view = np.ndarray(g.counts + (run,), dtype, buffer=scratch, offset=(g.phase * run + start) * itemsize,
                              strides=tuple(s * itemsize for s in g.steps) + (itemsize,))
            cols[t0:t0 + len(g.taps)].reshape(g.counts + (run,))[...] = view
            t0 += len(g.taps)
        # per channel: (k, length) columns, with a row of all the unit's columns between taps
        per_ch = cols.reshape(k, cb, phase_len)[:, :, :length].transpose(1, 0, 2)
        for t0, counts, fix in plan.fixes:
            per_ch[:, t0:t0 + math.prod(counts)].reshape((cb,) + counts + out_sp)[fix] = 0
        if k > n_taps:
            cols[n_taps] = 1
        target = out[i, c0 * mult:c1 * mult].reshape((cb, mult) + out_sp)
        if plan.direct:
            np.matmul(wk[c0:c1], per_ch, out=target.reshape(cb, mult, length))
        else:
            acc = np.empty((cb, mult, plan.grid_len), dtype=dtype)
            np.matmul(wk[c0:c1], per_ch, out=acc[:, :, :length])
            grid = acc.reshape((cb, mult, out_sp[0]) + tuple(stored[1:]))
            np.copyto(target, grid[(Ellipsis,) + tuple(slice(0, o) for o in out_sp[1:])])

    per_channel = (n_phases * phase_len + k * phase_len + mult * out_len) * itemsize
    return per_channel, compute


def _every(start: int, step: int, count: int) -> slice:
    """``count`` positions from ``start``, ``step`` apart."""
    return slice(start, start + step * (count - 1) + 1, step)


def _channels_last(sh: _Shape, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray
                   ) -> tuple[int, Callable[[int, int, int], None]]:
    """(bytes per channel of a unit, unit body writing out[i, channels c0:c1]) for the
    channels-last scratch (H, W, C) of 2-D images: a multiply and an add per tap, over runs of C
    (or W * C at stride 1) values with one weight per channel."""
    (sh0, sw0), (dh, dw), (oh, ow) = sh.strides, sh.dilations, sh.out_sp
    placed = sh.input_slices(sh.padded, (0, 0), (1, 1))
    gaps = placed is None or any(s.stop - s.start < p for s, p in zip(placed[0], sh.padded))
    taps = [(_every(kh * dh, sh0, oh), _every(kw * dw, sw0, ow), k)
            for k, (kh, kw) in enumerate(np.ndindex(*sh.kernel))]
    # at stride 1 a row of the scratch is W * C contiguous values: weights tiled to match make
    # each offset one long run per output row instead of runs of C
    rows_merge = sw0 == 1
    per_channel = (math.prod(sh.padded) + 2 * oh * ow) * out.itemsize
    multiply = np.multiply
    wk = w.reshape(sh.c, 1, -1).astype(out.dtype, copy=False)
    bk = None if bias is None else bias.astype(out.dtype, copy=False)

    def compute(i: int, c0: int, c1: int) -> None:
        cb = c1 - c0
        padded = math.prod(sh.padded) * cb
        work = _workspace(out.dtype, padded + 2 * oh * ow * cb)
        scratch = work[:padded].reshape(*sh.padded, cb)
        if gaps:
            scratch.fill(0)
        if placed is not None:
            scratch[placed[0]] = x[i, c0:c1][(slice(None),) + placed[1]].transpose(1, 2, 0)
        weights = wk[c0:c1, 0].T  # (taps, cb)
        if rows_merge:
            weights = np.tile(weights, (1, ow))
        acc = work[padded:padded + oh * ow * cb].reshape(oh, ow * cb)
        tmp = work[padded + oh * ow * cb:].reshape(oh, ow * cb)
        shaped = (oh, ow * cb) if rows_merge else (oh, ow, cb)
        a, t = acc.reshape(shaped), tmp.reshape(shaped)
        for k, (rows, cols, w_idx) in enumerate(taps):
            multiply(scratch[rows, cols].reshape(shaped), weights[w_idx], out=a if k == 0 else t)
            if k:
                a += t
        if bk is not None:
            acc.reshape(oh, ow, cb)[...] += bk[c0:c1]
        out[i, c0:c1] = acc.reshape(oh, ow, cb).transpose(2, 0, 1)

    return per_channel, compute
